package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/phase"
)

// rolloutInProgress is a three-wave rollout whose canary is done, whose eu wave has a failed
// cluster and whose last wave waits for approval, with a newer revision queued behind it.
func rolloutInProgress(now time.Time) phase.RolloutView {
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	return phase.RolloutView{
		Release: "web", Phase: "Progressing", Message: "wave eu: 1 of 2 clusters done",
		Revision: "main@sha1:2222222222222222222222222222222222222222", Digest: "sha256:" + strings.Repeat("b", 64),
		StableRevision: "main@sha1:1111111111111111111111111111111111111111", StableDigest: "sha256:" + strings.Repeat("a", 64),
		QueuedRevision: "main@sha1:3333333333333333333333333333333333333333", QueuedDigest: "sha256:" + strings.Repeat("c", 64),
		StartedAt: at(20 * time.Minute), UpdatedAt: at(time.Minute),
		Waves: []phase.WaveView{
			{Name: "canary", Phase: "Done", MaxConcurrent: 1, Bake: "10m", Clusters: []phase.RolloutClusterView{
				{Cluster: "c-canary", Phase: "Done", Revision: "main@sha1:2222222222222222222222222222222222222222", Since: at(5 * time.Minute)},
			}},
			{Name: "eu", Phase: "Progressing", MaxConcurrent: 2, MaxFailures: 1, Failures: 1, Clusters: []phase.RolloutClusterView{
				{Cluster: "c-eu-1", Phase: "Baking", Revision: "main@sha1:2222222222222222222222222222222222222222", Since: at(2 * time.Minute)},
				{Cluster: "c-eu-2", Phase: "Failed", Revision: "main@sha1:2222222222222222222222222222222222222222", Message: "Deployment/web/api not Ready within 15m"},
			}},
			{Name: "rest", Phase: "Pending", Approval: true, Clusters: []phase.RolloutClusterView{
				{Cluster: "c-us-1", Phase: "Pending", Revision: "main@sha1:1111111111111111111111111111111111111111"},
			}},
		},
		Events: []phase.RolloutEvent{
			{At: now.Add(-20 * time.Minute), Type: "started"},
			{At: now.Add(-5 * time.Minute), Type: "wave-done", Wave: "canary"},
			{At: now.Add(-time.Minute), Type: "approved", Wave: "rest", Actor: "token:alice", Message: "wave rest approved"},
			{At: now.Add(-time.Minute), Type: "halted", Wave: "eu", Message: "halted by token:bob: 2 failures"},
		},
	}
}

// TestPrintRollout reads the status of a rollout in progress as a user would: the phase, the
// three revisions, a block per wave with its approval and failures, each cluster's phase and
// message, and the events.
func TestPrintRollout(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	printRollout(&b, rolloutInProgress(now), now)
	out := squeeze(b.String())
	ts := func(d time.Duration) string { return now.Add(-d).Local().Format(time.RFC3339) }
	for _, want := range []string{
		"Release: web\nPhase: Progressing\nMessage: wave eu: 1 of 2 clusters done\n",
		"Revision: main@sha1:2222222222222222222222222222222222222222 (sha256:bbbbbbbbbbbb)\n",
		"Stable: main@sha1:1111111111111111111111111111111111111111 (sha256:aaaaaaaaaaaa)\n",
		"Queued: main@sha1:3333333333333333333333333333333333333333 (sha256:cccccccccccc), starts when this rollout ends\n",
		"Started: " + ts(20*time.Minute) + " (20m0s ago)\n",
		"\nWave canary: Done\n failures 0 of at most 0, 1 cluster(s) at a time, bake 10m\n",
		"\nWave eu: Progressing\n failures 1 of at most 1, 2 cluster(s) at a time\n",
		"\nWave rest: Pending\n approval required, not given yet, failures 0 of at most 0\n",
		" c-eu-1 Baking main@sha1:222222222222 " + ts(2*time.Minute) + " (2m0s ago)\n",
		" c-eu-2 Failed main@sha1:222222222222 - Deployment/web/api not Ready within 15m\n",
		" c-us-1 Pending main@sha1:111111111111 -\n",
		" " + ts(5*time.Minute) + " wave-done wave canary\n",
		" " + ts(time.Minute) + " approved wave rest approved, by token:alice\n",
		" " + ts(time.Minute) + " halted halted by token:bob: 2 failures\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rollout status lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "Wave canary") > strings.Index(out, "Wave eu") || strings.Index(out, "Wave eu") > strings.Index(out, "Wave rest") {
		t.Errorf("waves out of order:\n%s", out)
	}

	t.Run("an idle release says nothing rolls out", func(t *testing.T) {
		var b bytes.Buffer
		printRollout(&b, phase.RolloutView{Release: "db", Phase: "Idle", Waves: []phase.WaveView{{Name: "all", Phase: "Pending"}}}, now)
		for _, want := range []string{"Phase: Idle\n", "Revision: none: nothing is rolling out\n", "Stable: none yet", "Wave all: Pending\n", " no cluster\n"} {
			if !strings.Contains(squeeze(b.String()), want) {
				t.Errorf("idle rollout lacks %q:\n%s", want, b.String())
			}
		}
		if strings.Contains(b.String(), "Queued") || strings.Contains(b.String(), "Events") {
			t.Errorf("idle rollout shows a queue or events:\n%s", b.String())
		}
	})
	t.Run("an approved wave names who approved it, a paused rollout says so", func(t *testing.T) {
		v := rolloutInProgress(now)
		v.Waves[2].ApprovedBy = "token:alice"
		v.Paused = true
		var b bytes.Buffer
		printRollout(&b, v, now)
		for _, want := range []string{"Phase: Progressing (paused)\n", "approved by token:alice, failures 0"} {
			if !strings.Contains(squeeze(b.String()), want) {
				t.Errorf("lacks %q:\n%s", want, b.String())
			}
		}
	})
}

// squeeze makes every run of spaces one space and drops trailing ones, so that tests read
// tables without depending on column widths.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lead := ""
		if strings.HasPrefix(l, " ") {
			lead = " "
		}
		lines[i] = lead + strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestPrintRollouts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	halted := phase.RolloutView{Release: "api", Phase: "Halted", Message: "wave canary: 1 failure, at most 0", Revision: "v2", StableRevision: "v1",
		Waves: []phase.WaveView{{Name: "canary", Phase: "Halted", Clusters: []phase.RolloutClusterView{{Cluster: "c1", Phase: "Failed"}}}}}
	done := phase.RolloutView{Release: "db", Phase: "Completed", StableRevision: "v9",
		Waves: []phase.WaveView{{Name: "all", Phase: "Done", Clusters: []phase.RolloutClusterView{{Cluster: "c1", Phase: "Done"}}}}}
	var b bytes.Buffer
	printRollouts(&b, []phase.RolloutView{halted, rolloutInProgress(now), done})
	want := `RELEASE  PHASE        REVISION                STABLE                  WAVE    DONE  MESSAGE
api      Halted       v2                      v1                      canary  0/1   wave canary: 1 failure, at most 0
web      Progressing  main@sha1:222222222222  main@sha1:111111111111  eu      1/4   wave eu: 1 of 2 clusters done
db       Completed    -                       v9                      -       1/1   
`
	if b.String() != want {
		t.Errorf("rollout status (all):\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	printRollouts(&b, nil)
	if b.String() != "No release has a rollout.\n" {
		t.Errorf("no rollouts: %q", b.String())
	}
}

// TestRolloutUsage: mistakes in calling the commands exit 2 with a message naming them,
// before any request to a hub.
func TestRolloutUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout"}, "flotilla rollout needs a subcommand: abort, approve, pause, resume, rollback, status"},
		{[]string{"rollout", "promote", "web"}, `flotilla rollout has no subcommand "promote"`},
		{[]string{"rollout", "pause"}, "flotilla rollout pause: needs a release name"},
		{[]string{"rollout", "approve", "web", "api"}, "flotilla rollout approve: takes a release name, got 2 arguments: web api"},
		{[]string{"rollout", "status", "web", "api"}, "takes at most one release name"},
		{[]string{"rollout", "abort", "web", "--wave", "eu"}, "unknown flag: --wave"},
		{[]string{"rollout", "status", "-o", "xml"}, `want table or json or yaml, got "xml"`},
	} {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), append(tc.args, "--hub", "https://127.0.0.1:1", "--token", "t"), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("flotilla %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut.String(), tc.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), []string{"rollout", "approve", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "flotilla rollout approve web --wave rest") || !strings.Contains(out.String(), "--wave") {
		t.Errorf("rollout approve --help: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
