package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// rolloutFleet is a fleet whose release web rolls out along the waves given (YAML).
const rolloutFleet = webFleet + `  rollout:
%s
`

func rolloutWebCM(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: \"" + version + "\"}\n"
}

// webOn returns web's assignment on cluster in st, or false.
func webOn(st hubclient.StatusView, cluster string) (hubclient.AssignmentView, bool) {
	for _, a := range st.Assignments {
		if a.Release == "web" && a.Cluster == cluster {
			return a, true
		}
	}
	return hubclient.AssignmentView{}, false
}

// webAt reports whether web on cluster is desired at commit, applied and Ready.
func webAt(st hubclient.StatusView, cluster, commit string) bool {
	a, ok := webOn(st, cluster)
	return ok && containsCommit(a.DesiredRevision, commit) && a.AppliedRevision == a.DesiredRevision && a.Phase == hubclient.PhaseReady
}

// waitRollout polls web's rollout until cond holds.
func (f *fleet) waitRollout(what string, timeout time.Duration, cond func(phase.RolloutView) bool) phase.RolloutView {
	f.t.Helper()
	var last phase.RolloutView
	eventually.Within(f.t, timeout, func() error {
		v, err := f.client.Rollout(f.t.Context(), "web")
		if err != nil {
			return fmt.Errorf("%s: rollout: %w; last rollout read: %+v", what, err, last)
		}
		if last = v; !cond(last) {
			return fmt.Errorf("%s: not reached; rollout: %+v", what, last)
		}
		return nil
	})
	return last
}

func (rp *repo) head() string {
	rp.t.Helper()
	ref, err := rp.r.Head()
	if err != nil {
		rp.t.Fatal(err)
	}
	return ref.Hash().String()
}

// A three-wave rollout whose new revision fails on the canary: the rollout halts, the other
// clusters keep the old revision, and rollback through the user API restores the canary.
func TestRolloutHaltsOnAFailingCanaryAndRollsBack(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": rolloutWebCM("1")})
	good := src.head()
	waves := `    waves:
      - {name: canary, selector: {matchLabels: {ring: canary}}}
      - {name: eu, selector: {matchLabels: {region: eu}}}
      - {name: rest}
    progressDeadline: 10m`
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(rolloutFleet, srcDir, waves)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{
		"canary-1": {"ring": "canary", "region": "eu"}, "eu-1": {"region": "eu"}, "us-1": {"region": "us"},
	})
	all := map[string][]string{"canary-1": {"web"}, "eu-1": {"web"}, "us-1": {"web"}}
	f.waitStatus("the first revision rolled out wave by wave", 120*time.Second, converged(good, all))
	f.waitRollout("the first rollout completed", 30*time.Second, func(v phase.RolloutView) bool { return v.Phase == "Completed" })

	// A name the API server refuses: the canary's apply fails.
	bad := src.commit("break web", map[string]string{"web/web.yaml": rolloutWebCM("2") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Valid_Name}\n"})
	v := f.waitRollout("the rollout halted", 120*time.Second, func(v phase.RolloutView) bool { return v.Phase == "Halted" })
	if !containsCommit(v.Revision, bad) || !containsCommit(v.StableRevision, good) || !strings.Contains(v.Message, "halted in wave canary") {
		t.Errorf("halted rollout %+v: want revision %s, stable %s, halted in wave canary", v, bad, good)
	}
	// The rollout's record is written before the documents of the same step.
	st := f.waitStatus("the halt in every cluster's status", 30*time.Second, func(s hubclient.StatusView) bool {
		a, _ := webOn(s, "us-1")
		return strings.Contains(a.Rollout, "halted")
	})
	if a, _ := webOn(st, "canary-1"); !containsCommit(a.DesiredRevision, bad) || a.Phase != hubclient.PhaseFailed {
		t.Errorf("canary-1: desired %s phase %s, want the bad revision, Failed", a.DesiredRevision, a.Phase)
	}
	for _, c := range []string{"eu-1", "us-1"} {
		a, _ := webOn(st, c)
		if !webAt(st, c, good) || !strings.Contains(a.Rollout, "halted") {
			t.Errorf("%s: desired %s applied %s phase %s (%q); want the good revision, Ready, held by the halted rollout", c, a.DesiredRevision, a.AppliedRevision, a.Phase, a.Rollout)
		}
		if got, _ := configMapData(t, f.clusters[c], "web", "web", "version"); got != "1" {
			t.Errorf("%s runs web version %q, want 1", c, got)
		}
	}
	// Time passes (past the progress deadline): nothing else gets the revision.
	f.clock.advance(time.Hour)
	f.waitStatus("another round of reports", 30*time.Second, func(s hubclient.StatusView) bool {
		a, _ := webOn(s, "us-1")
		return a.ReportedAt != nil && a.ReportedAt.After(time.Now().Add(-time.Second))
	})
	if v, err := f.client.Rollout(t.Context(), "web"); err != nil || v.Phase != "Halted" {
		t.Errorf("after an hour: rollout %s (%v), want still Halted", v.Phase, err)
	}

	v, err := f.client.ActOnRollout(t.Context(), "web", "rollback", hubclient.RolloutAction{})
	if err != nil || v.Phase != "RolledBack" {
		t.Fatalf("rollback: %+v, %v", v, err)
	}
	f.waitStatus("the canary back on the good revision", 90*time.Second, converged(good, all))
	if got, _ := configMapData(t, f.clusters["canary-1"], "web", "web", "version"); got != "1" {
		t.Errorf("canary-1 runs web version %q after the rollback, want 1", got)
	}
	recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Release: "web", Action: "rollout.rolled-back"})
	if err != nil || len(recs) != 1 || recs[0].Actor != "token:admin" {
		t.Errorf("rollback audit: %+v, %v; want one record by token:admin", recs, err)
	}
	if recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Release: "web", Action: "rollout.halted"}); err != nil || len(recs) != 1 || recs[0].Actor != "hub" {
		t.Errorf("halt audit: %+v, %v; want one record by hub", recs, err)
	}
}

// An approval gate holds its wave until someone approves it, and a commit that lands
// mid-rollout is queued: the later wave gets the rollout's revision, never the newer one
// before the canary.
func TestRolloutApprovalAndMidRolloutCommit(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": rolloutWebCM("1")})
	r1 := src.head()
	waves := `    waves:
      - {name: canary, selector: {matchLabels: {ring: canary}}}
      - {name: rest, approval: required}`
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fmt.Sprintf(rolloutFleet, srcDir, waves)})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"canary-1": {"ring": "canary"}, "prod-1": {"env": "prod"}})

	t.Run("the approval gate holds the wave", func(t *testing.T) {
		f.waitRollout("the rest waits for approval", 120*time.Second, func(v phase.RolloutView) bool { return v.Phase == "WaitingApproval" })
		st := f.waitStatus("the canary on r1", 60*time.Second, func(s hubclient.StatusView) bool { return webAt(s, "canary-1", r1) })
		if a, ok := webOn(st, "prod-1"); ok {
			t.Errorf("prod-1 was assigned %s before the approval", a.DesiredRevision)
		}
		f.clock.advance(24 * time.Hour)
		if v, err := f.client.Rollout(t.Context(), "web"); err != nil || v.Phase != "WaitingApproval" {
			t.Errorf("a day later: rollout %s (%v), want WaitingApproval", v.Phase, err)
		}
		if _, err := f.client.ActOnRollout(t.Context(), "web", "approve", hubclient.RolloutAction{}); err != nil {
			t.Fatal(err)
		}
		f.waitStatus("r1 everywhere", 90*time.Second, converged(r1, map[string][]string{"canary-1": {"web"}, "prod-1": {"web"}}))
	})

	t.Run("a commit landing mid-rollout waits its turn", func(t *testing.T) {
		r2 := src.commit("web 2", map[string]string{"web/web.yaml": rolloutWebCM("2")})
		f.waitRollout("r2 waits for approval", 90*time.Second, func(v phase.RolloutView) bool {
			return containsCommit(v.Revision, r2) && v.Phase == "WaitingApproval"
		})
		f.waitStatus("the canary on r2", 60*time.Second, func(s hubclient.StatusView) bool { return webAt(s, "canary-1", r2) })
		r3 := src.commit("web 3", map[string]string{"web/web.yaml": rolloutWebCM("3")})
		v := f.waitRollout("r3 queued", 60*time.Second, func(v phase.RolloutView) bool { return containsCommit(v.QueuedRevision, r3) })
		if !containsCommit(v.Revision, r2) {
			t.Errorf("the rollout moved to %s when r3 landed; want it pinned to r2", v.Revision)
		}
		st, err := f.client.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := webOn(st, "canary-1"); !containsCommit(a.DesiredRevision, r2) {
			t.Errorf("canary-1 desired %s, want r2 (r3 is queued)", a.DesiredRevision)
		}
		if a, _ := webOn(st, "prod-1"); !containsCommit(a.DesiredRevision, r1) {
			t.Errorf("prod-1 desired %s, want r1 (its wave waits for approval)", a.DesiredRevision)
		}

		if _, err := f.client.ActOnRollout(t.Context(), "web", "approve", hubclient.RolloutAction{Wave: "rest"}); err != nil {
			t.Fatal(err)
		}
		// prod-1 gets r2, the rollout's revision; then r3 starts from the canary and prod-1
		// stays on r2 until its wave is approved again.
		f.waitStatus("prod-1 on r2 and the canary on r3", 120*time.Second, func(s hubclient.StatusView) bool {
			return webAt(s, "prod-1", r2) && webAt(s, "canary-1", r3)
		})
		f.waitRollout("r3 waits for approval", 60*time.Second, func(v phase.RolloutView) bool {
			return containsCommit(v.Revision, r3) && v.Phase == "WaitingApproval"
		})
		st = f.waitStatus("prod-1 held at r2 for the approval", 30*time.Second, func(s hubclient.StatusView) bool {
			a, _ := webOn(s, "prod-1")
			return strings.Contains(a.Rollout, "waits for approval")
		})
		if !webAt(st, "prod-1", r2) {
			a, _ := webOn(st, "prod-1")
			t.Errorf("prod-1: desired %s phase %s while r3 waits for approval; want r2, Ready", a.DesiredRevision, a.Phase)
		}
		if got, _ := configMapData(t, f.clusters["prod-1"], "web", "web", "version"); got != "2" {
			t.Errorf("prod-1 runs web version %q, want 2", got)
		}
	})
}

// Two clusters relabelled out of a release with a rollout, in different waves: the canary
// loses the release at once, and the later wave's cluster keeps it (applied, not pruned)
// until the canary's removal has baked; its removal is then audited as the relabel of the
// user who made it.
func TestRelabelledClustersLeaveAlongTheWaves(t *testing.T) {
	t.Parallel()
	srcDir, fleetDir := t.TempDir(), t.TempDir()
	src := newRepo(t, srcDir, map[string]string{"web/web.yaml": rolloutWebCM("1")})
	r1 := src.head()
	waves := `    waves:
      - {name: canary, selector: {matchLabels: {ring: canary}}, bake: 1h}
      - {name: rest}`
	fleetYAML := strings.Replace(fmt.Sprintf(rolloutFleet, srcDir, waves), "targets: [{selector: {}}]", "targets: [{selector: {matchLabels: {env: prod}}}]", 1)
	newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fleetYAML})
	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{
		"canary-1": {"ring": "canary", "env": "prod"}, "prod-1": {"env": "prod"},
	})
	// The first rollout: the canary bakes an hour (on the hub's clock) before the rest.
	f.waitRollout("the canary baking r1", 120*time.Second, func(v phase.RolloutView) bool {
		return len(v.Waves) == 2 && len(v.Waves[0].Clusters) == 1 && v.Waves[0].Clusters[0].Phase == "Baking"
	})
	f.clock.advance(time.Hour)
	f.waitStatus("r1 everywhere", 120*time.Second, converged(r1, map[string][]string{"canary-1": {"web"}, "prod-1": {"web"}}))
	f.waitRollout("the rollout completed", 30*time.Second, func(v phase.RolloutView) bool { return v.Phase == "Completed" })

	// The canary loses every label: it leaves in the wave it was in, the first, at once.
	if _, err := f.client.LabelCluster(t.Context(), "canary-1", map[string]*string{"env": nil, "ring": nil}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 90*time.Second, func() error {
		if v, ok := configMapData(t, f.clusters["canary-1"], "web", "web", "version"); ok {
			return fmt.Errorf("canary-1 still runs web (version %q) after it was relabelled out of the first wave", v)
		}
		return nil
	})
	staging := "staging"
	relabelled := time.Now()
	if _, err := f.client.LabelCluster(t.Context(), "prod-1", map[string]*string{"env": &staging}); err != nil {
		t.Fatal(err)
	}
	// prod-1 keeps web through a reconcile after its relabel: its wave waits for the
	// canary's removal to bake.
	st := f.waitStatus("prod-1 held, and reconciled since its relabel", 60*time.Second, func(s hubclient.StatusView) bool {
		a, ok := webOn(s, "prod-1")
		return ok && strings.Contains(a.Rollout, "no longer selected") && a.ReportedAt != nil && a.ReportedAt.After(relabelled.Add(time.Second))
	})
	if a, _ := webOn(st, "prod-1"); !webAt(st, "prod-1", r1) || !strings.Contains(a.Rollout, "removal waits for wave rest") {
		t.Errorf("prod-1: desired %s phase %s (%q); want r1, Ready, its removal waiting for wave rest", a.DesiredRevision, a.Phase, a.Rollout)
	}
	if got, _ := configMapData(t, f.clusters["prod-1"], "web", "web", "version"); got != "1" {
		t.Errorf("prod-1 runs web version %q while the canary's removal bakes, want 1", got)
	}
	v, err := f.client.Rollout(t.Context(), "web")
	if err != nil || v.Phase != "Progressing" || !strings.Contains(v.Message, "removal: wave canary") {
		t.Errorf("rollout %s %q (%v) while the canary's removal bakes; want Progressing, removal in wave canary", v.Phase, v.Message, err)
	}
	if recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "prod-1", Release: "web", Action: "assignment.removed"}); err != nil || len(recs) != 0 {
		t.Errorf("prod-1's removal audited before its turn: %+v (%v)", recs, err)
	}

	f.clock.advance(time.Hour)
	eventually.Within(t, 90*time.Second, func() error {
		if v, ok := configMapData(t, f.clusters["prod-1"], "web", "web", "version"); ok {
			return fmt.Errorf("prod-1 still runs web (version %q) after the canary's removal baked", v)
		}
		return nil
	})
	recs, err := f.client.Audit(t.Context(), hubclient.AuditFilter{Cluster: "prod-1", Release: "web", Action: "assignment.removed"})
	if err != nil || len(recs) != 1 || recs[0].Actor != "token:admin" || recs[0].Detail["reason"] != "not-selected" {
		t.Errorf("prod-1's removal audit: %+v (%v); want one record by token:admin, reason not-selected", recs, err)
	}
	f.waitRollout("the removal completed", 30*time.Second, func(v phase.RolloutView) bool { return v.Phase == "Completed" })
}
