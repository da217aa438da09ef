package agent

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestWindowHoldsPruneOnARealCluster: a real agent against the package's API server. A deny
// window that blocks prune lets a new revision land but holds back the prune of what it
// drops: the object stays, and stays in the inventory (prune off alone would leave it
// unmanaged for good), across reconciles and a later revision; once the window is gone the
// next reconcile of the same revision prunes it.
func TestWindowHoldsPruneOnARealCluster(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	hub.identity(stateDir, "edge-prune")
	release := uniqueName("quiet")
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {a: b}\n", name)
	}
	both := hub.addArtifact(map[string]string{"app/keep.yaml": cm("keep"), "app/dropped.yaml": cm("dropped")})
	one := hub.addArtifact(map[string]string{"app/keep.yaml": cm("keep")})
	assign := func(digest, revision string) *agentv1.Assignment {
		return &agentv1.Assignment{Release: release, Revision: revision, Digest: digest, Path: "app", Namespace: release,
			CreateNamespace: true, Prune: true, SelfHeal: true, IntervalSeconds: 1}
	}
	ready := func(gen int64, revision string) func(*agentv1.AssignmentStatus) bool {
		return func(st *agentv1.AssignmentStatus) bool {
			return st.Release == release && st.Generation == gen && st.Phase == "Ready" && st.Revision == revision
		}
	}
	startAgent(t, hub, stateDir)
	hub.publish(&agentv1.DesiredState{Cluster: "edge-prune", Generation: 1, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{assign(both, "main@1")}})
	eventually.Within(t, time.Minute, hub.holds("main@1 Ready", func() bool { return hub.reported(ready(1, "main@1")) > 0 }))
	if !configMapExists(t, release, "dropped") {
		t.Fatal("main@1's ConfigMap is missing")
	}

	// Open since this minute, for two hours, on the agent's (wall) clock.
	now := time.Now().UTC()
	quiet := &agentv1.Gate{Name: "quiet", Kind: "window", Type: "deny", Schedule: fmt.Sprintf("%d %d * * *", now.Minute(), now.Hour()),
		DurationSeconds: 2 * 3600, Blocks: []string{"prune"}}
	closes := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), 0, 0, time.UTC).Add(2 * time.Hour).Format("15:04")
	hub.publish(&agentv1.DesiredState{Cluster: "edge-prune", Generation: 2, ExplicitRemovals: true,
		Assignments: []*agentv1.Assignment{assign(one, "main@2")}, Gates: []*agentv1.Gate{quiet}})
	held := func(st *agentv1.AssignmentStatus) bool {
		return st.Release == release && st.Generation == 2 && st.Phase == "Ready" && st.Revision == "main@2" && st.Waiting != ""
	}
	// Two reconciles at generation 2: the second is an interval after the first.
	eventually.Within(t, time.Minute, hub.holds("main@2 applied twice inside the window, its prune held", func() bool { return hub.reported(held) >= 2 }))
	if !configMapExists(t, release, "dropped") {
		t.Fatal("the ConfigMap main@2 drops was pruned while a window blocks prune")
	}
	hub.mu.Lock()
	var waiting string
	var pruned int32
	for _, st := range hub.statuses {
		if held(st) {
			waiting, pruned = st.Waiting, st.Pruned
		}
	}
	hub.mu.Unlock()
	if want := `window "quiet" closes ` + closes + ` UTC (it holds prune: 1 object that left the set wait to be pruned)`; waiting != want {
		t.Errorf("waiting %q\nwant    %q", waiting, want)
	}
	if pruned != 0 {
		t.Errorf("reported %d pruned inside the window, want 0", pruned)
	}

	// Another revision inside the window: the object held for pruning stays held.
	three := hub.addArtifact(map[string]string{"app/keep.yaml": cm("keep"), "app/new.yaml": cm("new")})
	hub.publish(&agentv1.DesiredState{Cluster: "edge-prune", Generation: 3, ExplicitRemovals: true,
		Assignments: []*agentv1.Assignment{assign(three, "main@3")}, Gates: []*agentv1.Gate{quiet}})
	eventually.Within(t, time.Minute, hub.holds("main@3 Ready inside the window", func() bool { return hub.reported(ready(3, "main@3")) > 0 }))
	if !configMapExists(t, release, "new") || !configMapExists(t, release, "dropped") {
		t.Fatal("inside the window main@3's new ConfigMap is missing, or the held one was pruned")
	}

	// main@2 again, without the window: it prunes what both held revisions dropped.
	hub.publish(&agentv1.DesiredState{Cluster: "edge-prune", Generation: 4, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{assign(one, "main@2")}})
	eventually.Within(t, time.Minute, hub.holds("pruned without the window", func() bool {
		return hub.reported(ready(4, "main@2")) > 0 && !configMapExists(t, release, "dropped") && !configMapExists(t, release, "new")
	}))
	if !configMapExists(t, release, "keep") {
		t.Error("the ConfigMap main@2 keeps was pruned")
	}
}
