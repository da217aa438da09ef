package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// A document the agent cannot read (here Helm values that are not JSON) is refused as a
// whole at receipt, reported as any refused document is (heartbeat, metric), while the agent
// keeps running the last one it accepted; the next readable document ends the refusal. A
// state dir holding such a document, as an agent before this check kept it, does not keep
// the agent from starting.
func TestMalformedDocumentIsRefused(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	hub.identity(stateDir, "edge-1")
	web := uniqueName("web")
	digest := hub.addArtifact(map[string]string{"web/cm.yaml": configMap("web")})
	assign := func(revision string) *agentv1.Assignment {
		return &agentv1.Assignment{Release: web, Revision: revision, Digest: digest, Path: "web", Namespace: web, CreateNamespace: true, IntervalSeconds: 1}
	}
	malformed := func(gen int64) *agentv1.DesiredState {
		bad := assign("main@2")
		bad.Helm = &agentv1.HelmRelease{ValuesJson: []byte(`{"replicas":`)}
		return &agentv1.DesiredState{Cluster: "edge-1", Generation: gen, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{bad}}
	}
	ready := func(gen int64) func(*agentv1.AssignmentStatus) bool {
		return func(st *agentv1.AssignmentStatus) bool {
			return st.Release == web && st.Generation == gen && st.Phase == "Ready"
		}
	}

	outer := t // the agent outlives each subtest
	agent := startAgent(outer, hub, stateDir)
	hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 1, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{assign("main@1")}})
	eventually.Within(t, time.Minute, hub.holds("web Ready at generation 1", func() bool { return hub.reported(ready(1)) > 0 }))

	t.Run("refused as a whole, the accepted document kept running", func(t *testing.T) {
		hub.publish(malformed(2))
		eventually.Within(t, time.Minute, hub.holds("the agent answers generation 2", func() bool {
			hb := hub.lastHeartbeat()
			return hb != nil && (hb.RefusedGeneration == 2 || hb.Generation == 2)
		}))
		hb := hub.lastHeartbeat()
		if hb.RefusedGeneration != 2 || hb.Generation != 1 {
			t.Fatalf("heartbeat: generation %d refused %d; want generation 1 kept, 2 refused", hb.Generation, hb.RefusedGeneration)
		}
		want := fmt.Sprintf(`desired state generation 2 cannot be read; refused, nothing applied or pruned: desired state generation 2 of cluster "edge-1": release %q: helm values: unexpected EOF`, web)
		if hb.RefusedReason != want {
			t.Errorf("refused reason = %q\nwant %q", hb.RefusedReason, want)
		}
		before := hub.reported(ready(1))
		eventually.Within(t, time.Minute, hub.holds("web reconciled again at generation 1", func() bool { return hub.reported(ready(1)) > before }))
		if n := hub.reported(func(st *agentv1.AssignmentStatus) bool { return st.Generation == 2 }); n > 0 {
			t.Errorf("%d statuses of the refused generation 2 reported", n)
		}
		out := scrape(t, agent.metrics)
		for _, want := range []string{"flotilla_agent_desired_refused_generation 2", "flotilla_agent_desired_generation 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})

	t.Run("the next readable document ends the refusal", func(t *testing.T) {
		hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 3, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{assign("main@3")}})
		eventually.Within(t, time.Minute, hub.holds("web Ready at generation 3, the refusal over", func() bool {
			hb := hub.lastHeartbeat()
			return hub.reported(ready(3)) > 0 && hb != nil && hb.Generation == 3 && hb.RefusedGeneration == 0 && hb.RefusedReason == ""
		}))
	})

	t.Run("a state dir holding an unreadable document does not stop the agent", func(t *testing.T) {
		agent.stop()
		// As an agent before the check at receipt would have cached generation 4.
		data, err := proto.Marshal(malformed(4))
		if err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(filepath.Join(stateDir, "agent.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketDesired).Put(keyDesired, data) }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 5, ExplicitRemovals: true, Assignments: []*agentv1.Assignment{assign("main@5")}})
		startAgent(outer, hub, stateDir)
		eventually.Within(t, time.Minute, hub.holds("the restarted agent takes generation 5 on", func() bool { return hub.reported(ready(5)) > 0 }))
	})
}
