package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestRolloutCommandsAgainstHub drives a real hub's rollout with the CLI, as a user would:
// the canary wave is done, the last wave waits for approval; status shows it wave by wave;
// a viewer may not approve; an admin approves, pauses and resumes; a second approval and an
// unknown release are refused with the hub's reason.
func TestRolloutCommandsAgainstHub(t *testing.T) {
	t.Parallel()
	f := hubtest.StartRollout(t, "waves:\n- {name: canary, selector: {matchLabels: {ring: canary}}}\n- {name: rest, approval: required}",
		map[string]map[string]string{"can-1": {"ring": "canary"}, "a": {"region": "eu"}, "b": {"region": "us"}})
	f.ReportReady(t, "can-1", f.Desired(t, "can-1"))
	f.WaitRollout(t, "waiting for approval", func(v phase.RolloutView) bool { return v.Phase == "WaitingApproval" })

	run := func(t *testing.T, token string, wantCode int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		all := append(slices.Clip(args), "--hub", f.APIURL, "--token", token, "--ca", f.CAPath)
		if code := Run(t.Context(), all, &out, &errOut); code != wantCode {
			t.Fatalf("flotilla %s: exit %d, want %d: %s%s", strings.Join(args, " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	out := squeeze(run(t, f.AdminToken, 0, "rollout", "status", hubtest.RolloutRelease))
	for _, want := range []string{
		"Release: web\nPhase: WaitingApproval\nMessage: wave rest waits for approval\n",
		"\nWave canary: Done\n failures 0 of at most 0",
		" can-1 Done ",
		"\nWave rest: WaitingApproval\n approval required, not given yet",
		"Stable: none yet",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rollout status web lacks %q:\n%s", want, out)
		}
	}
	if out := squeeze(run(t, f.AdminToken, 0, "rollout", "status")); !strings.Contains(out, "\nweb WaitingApproval ") || !strings.Contains(out, " rest 1/") || !strings.Contains(out, " wave rest waits for approval") {
		t.Errorf("rollout status (all):\n%s", out)
	}
	var v phase.RolloutView
	if err := json.Unmarshal([]byte(run(t, f.AdminToken, 0, "rollout", "status", "web", "-o", "json")), &v); err != nil || v.Release != "web" || len(v.Waves) != 2 || v.Waves[1].Phase != "WaitingApproval" {
		t.Errorf("rollout status -o json: %+v (%v)", v, err)
	}

	c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := c.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "watcher", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	if out := run(t, viewer.Token, 1, "rollout", "approve", "web"); !strings.Contains(out, "token:watcher") || !strings.Contains(out, "Hint: this token's role does not allow it") {
		t.Errorf("approve as a viewer:\n%s", out)
	}
	if out := run(t, viewer.Token, 0, "rollout", "status", "web"); !strings.Contains(out, "WaitingApproval") {
		t.Errorf("status as a viewer:\n%s", out)
	}

	// The answer is the rollout as the action left it; the controller starts the wave at
	// its next step.
	if out := run(t, f.AdminToken, 0, "rollout", "approve", "web", "--wave", "rest"); !strings.Contains(out, "rollout/web approved (wave rest)\nPhase: ") {
		t.Errorf("approve --wave rest:\n%s", out)
	}
	f.WaitRollout(t, "progressing on wave rest", func(v phase.RolloutView) bool { return v.Phase == "Progressing" })
	if out := run(t, f.AdminToken, 1, "rollout", "approve", "web", "--wave", "rest"); !strings.Contains(out, "already approved") {
		t.Errorf("a second approval:\n%s", out)
	}
	if out := squeeze(run(t, f.AdminToken, 0, "rollout", "status", "web")); !strings.Contains(out, "approved by token:admin") {
		t.Errorf("status after the approval names who approved:\n%s", out)
	}
	if out := run(t, f.AdminToken, 0, "rollout", "pause", "web"); !strings.Contains(out, "rollout/web paused\nPhase: Paused\n") {
		t.Errorf("pause:\n%s", out)
	}
	if out := run(t, f.AdminToken, 0, "rollout", "resume", "web", "-o", "json"); !strings.Contains(out, `"phase": "Progressing"`) || !strings.Contains(out, `"paused": false`) {
		t.Errorf("resume -o json:\n%s", out)
	}
	if out := run(t, f.AdminToken, 1, "rollout", "status", "nope"); !strings.Contains(out, `release "nope" not found`) {
		t.Errorf("status of an unknown release:\n%s", out)
	}
}

// TestStatusRolloutLine: after a first rollout completed, a new commit starts another; the
// cluster of the later wave keeps the stable revision, and `flotilla status` says why, in the
// scheduler's words, as the assignment's "rollout" in JSON.
func TestStatusRolloutLine(t *testing.T) {
	t.Parallel()
	f := hubtest.StartRollout(t, "waves:\n- {name: canary, selector: {matchLabels: {ring: canary}}}\n- {name: rest}",
		map[string]map[string]string{"can-1": {"ring": "canary"}, "a": {"region": "eu"}})
	first := f.Desired(t, "can-1")
	f.ReportReady(t, "can-1", first)
	f.ReportReady(t, "a", f.Desired(t, "a"))
	f.WaitRollout(t, "completed", func(v phase.RolloutView) bool { return v.Phase == "Completed" })

	f.Commit(t, "debug")
	v := f.WaitRollout(t, "rolling out the new commit", func(v phase.RolloutView) bool {
		return v.Phase == "Progressing" && v.Revision != first.Revision
	})
	f.DesiredAt(t, "can-1", v.Revision) // the canary's wave has started; the reschedule follows the view
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		all := append(slices.Clip(args), "--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath)
		if code := Run(t.Context(), all, &out, &errOut); code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String()
	}
	held := "a: Rollout: held at " + short(first.Revision) + ": wave rest waits for canary\n"
	if out := run("status", "web"); !strings.Contains(out, "\n\n"+held) {
		t.Errorf("flotilla status web lacks %q:\n%s", held, out)
	}
	var st hubclient.StatusView
	if err := json.Unmarshal([]byte(run("status", "web", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Assignments {
		want := ""
		if a.Cluster == "a" {
			want = strings.TrimSuffix(strings.TrimPrefix(held, "a: Rollout: "), "\n")
		}
		if a.Rollout != want || (a.Cluster == "a") != (a.DesiredRevision == first.Revision) {
			t.Errorf("%s: rollout %q desired %s, want %q (first revision %s, new %s)", a.Cluster, a.Rollout, a.DesiredRevision, want, first.Revision, v.Revision)
		}
	}
	out := squeeze(run("rollout", "status", "web"))
	for _, want := range []string{"Revision: " + v.Revision + " (", "Stable: " + first.Revision + " ("} {
		if !strings.Contains(out, want) {
			t.Errorf("rollout status lacks %q:\n%s", want, out)
		}
	}
}
