package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// runningAgent is a real agent, against the package's real API server, pulling from a
// fakeHub.
type runningAgent struct {
	metrics *Metrics
	stop    func()
}

func startAgent(t *testing.T, hub *fakeHub, stateDir string) *runningAgent {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("AGENT_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m := NewMetrics()
	a, err := New(t.Context(), Options{
		StateDir: stateDir, RESTConfig: testCluster(t).RESTConfig(), Logger: log, Metrics: m,
		HeartbeatInterval: 100 * time.Millisecond, ReportInterval: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			t.Errorf("agent: %v", err)
		}
		a.Close()
	}()
	ra := &runningAgent{metrics: m, stop: func() { cancel(); <-done }}
	t.Cleanup(ra.stop)
	return ra
}

// configMapExists reports whether the ConfigMap is in the cluster.
func configMapExists(t *testing.T, ns, name string) bool {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(testCluster(t).RESTConfig())
	_, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func configMap(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {release: %s}\n", name, name)
}

// TestRemovalIsExplicit drives a real agent, reconciling a real API server, through desired
// states served by a hub it cannot tell from the real one: the end-to-end proof that removal
// is explicit (refusal, heartbeat, metrics, the prune on a tombstone). The rules themselves,
// with unassigned inventories, old hubs and the rest, are testdata/scenarios/tombstones.txt.
func TestRemovalIsExplicit(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	hub.identity(stateDir, "edge-1")
	baseline, web := uniqueName("baseline"), uniqueName("web")
	digest := hub.addArtifact(map[string]string{"baseline/cm.yaml": configMap("baseline"), "web/cm.yaml": configMap("web")})
	assign := func(release, path string) *agentv1.Assignment {
		return &agentv1.Assignment{
			Release: release, Revision: "main@1", Digest: digest, Path: path, Namespace: release,
			CreateNamespace: true, Prune: true, IntervalSeconds: 1,
		}
	}
	ready := func(release string, gen int64) func(*agentv1.AssignmentStatus) bool {
		return func(st *agentv1.AssignmentStatus) bool {
			return st.Release == release && st.Generation == gen && st.Phase == "Ready"
		}
	}

	outer := t // the agent outlives each subtest
	agent := startAgent(outer, hub, stateDir)
	hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 1, ExplicitRemovals: true,
		Assignments: []*agentv1.Assignment{assign(baseline, "baseline"), assign(web, "web")}})
	eventually.Within(t, time.Minute, hub.holds("both releases Ready at generation 1", func() bool {
		return hub.reported(ready(baseline, 1)) > 0 && hub.reported(ready(web, 1)) > 0
	}))
	if !configMapExists(t, baseline, "baseline") {
		t.Fatal("baseline's ConfigMap is missing after it was reported Ready")
	}

	t.Run("refuses a document that drops a release without a tombstone", func(t *testing.T) {
		// Reports on baseline wait in the outbox when the refusal comes: the hub would refuse
		// them (its desired state no longer names baseline), and they must not hold back the
		// reports behind them.
		hub.mu.Lock()
		hub.holdReports = true
		hub.mu.Unlock()
		eventually.Within(t, time.Minute, hub.holds("reports queued while the hub does not take them", func() bool {
			hb := hub.lastHeartbeat()
			return hb != nil && hb.OutboxDepth >= 3
		}))
		hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 2, ExplicitRemovals: true,
			Assignments: []*agentv1.Assignment{assign(web, "web")}})
		// Either outcome ends the wait: the refusal, or the agent taking generation 2 on (the
		// agent before tombstones did, and pruned baseline).
		eventually.Within(t, time.Minute, hub.holds("the agent answers generation 2", func() bool {
			hb := hub.lastHeartbeat()
			return hb != nil && (hb.RefusedGeneration == 2 || hb.Generation == 2)
		}))
		hub.mu.Lock()
		hub.holdReports = false
		hub.mu.Unlock()
		// A reconcile pass after the answer, reported: web again at generation 1 (the agent
		// keeps running it), or web at generation 2 (it took generation 2 on, after pruning
		// what it dropped). Reports keep flowing: the agent does not queue reports on
		// baseline, which the hub's desired state no longer names and the hub would refuse.
		before := hub.reported(ready(web, 1))
		eventually.Within(t, time.Minute, hub.holds("a reconcile pass after generation 2 arrived, reported", func() bool {
			return hub.reported(ready(web, 1)) > before || hub.reported(ready(web, 2)) > 0 || !configMapExists(t, baseline, "baseline")
		}))
		if !configMapExists(t, baseline, "baseline") {
			t.Fatal("baseline's ConfigMap was pruned on a desired state without a tombstone")
		}
		hb := hub.lastHeartbeat()
		if hb.RefusedGeneration != 2 || hb.Generation != 1 {
			t.Errorf("heartbeat: generation %d refused %d; want generation 1 kept, 2 refused", hb.Generation, hb.RefusedGeneration)
		}
		want := fmt.Sprintf("desired state generation 2 drops release %q without a tombstone; refused, nothing pruned", baseline)
		if hb.RefusedReason != want {
			t.Errorf("refused reason = %q\nwant %q", hb.RefusedReason, want)
		}
		if hub.reported(ready(web, 2)) > 0 {
			t.Error("web was reconciled at the refused generation 2")
		}
		hub.mu.Lock()
		refusedReports := hub.refusedReports
		hub.mu.Unlock()
		if refusedReports > 0 {
			t.Errorf("the hub refused %d report calls: the agent reported on a release the hub dropped", refusedReports)
		}
		out := scrape(t, agent.metrics)
		for _, want := range []string{"flotilla_agent_desired_refused_generation 2", "flotilla_agent_desired_generation 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})

	t.Run("a restart keeps the accepted document and refuses again", func(t *testing.T) {
		agent.stop()
		st, err := openState(stateDir)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := st.loadDesired()
		st.close()
		if err != nil {
			t.Fatal(err)
		}
		if generationOf(ds) != 1 {
			t.Fatalf("state dir holds generation %d; want the accepted 1, not the refused 2", generationOf(ds))
		}
		hub.mu.Lock()
		hub.heartbeats = nil
		hub.mu.Unlock()
		agent = startAgent(outer, hub, stateDir)
		eventually.Within(t, time.Minute, hub.holds("the restarted agent refuses generation 2", func() bool {
			hb := hub.lastHeartbeat()
			return hb != nil && hb.RefusedGeneration == 2 && hb.Generation == 1
		}))
		if !configMapExists(t, baseline, "baseline") {
			t.Fatal("baseline's ConfigMap was pruned after a restart")
		}
	})

	t.Run("prunes a release on its tombstone", func(t *testing.T) {
		hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 3, ExplicitRemovals: true,
			Assignments: []*agentv1.Assignment{assign(web, "web")},
			Removed:     []*agentv1.Tombstone{{Release: baseline, Reason: "release-deleted", FleetRevision: "main@2", Revision: "main@1", Digest: digest}}})
		eventually.Within(t, time.Minute, hub.holds("baseline pruned and generation 3 accepted", func() bool {
			hb := hub.lastHeartbeat()
			return !configMapExists(t, baseline, "baseline") && hb.Generation == 3 && hb.RefusedGeneration == 0 && hb.RefusedReason == ""
		}))
		if !configMapExists(t, web, "web") {
			t.Error("web's ConfigMap was pruned with baseline")
		}
		out := scrape(t, agent.metrics)
		if !strings.Contains(out, "flotilla_agent_desired_refused_generation 0") {
			t.Errorf("metrics still show a refusal:\n%s", out)
		}
	})

	t.Run("a tombstone whose inventory is gone changes nothing", func(t *testing.T) {
		hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 4, ExplicitRemovals: true,
			Assignments: []*agentv1.Assignment{assign(web, "web")},
			Removed: []*agentv1.Tombstone{
				{Release: baseline, Reason: "release-deleted", FleetRevision: "main@2"},
				{Release: "never-here", Reason: "not-selected", FleetRevision: "main@3"},
			}})
		eventually.Within(t, time.Minute, hub.holds("web Ready at generation 4", func() bool { return hub.reported(ready(web, 4)) > 0 }))
		if !configMapExists(t, web, "web") {
			t.Error("web's ConfigMap was pruned")
		}
	})
}
