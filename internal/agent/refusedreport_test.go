package agent

import (
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// A report the hub refuses as invalid can never be delivered: it must not hold back the
// reports queued behind it. The agent sends the refused batch one by one, drops that report
// (logged and counted), and delivers the rest.
func TestRefusedReportDoesNotBlockTheOutbox(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	hub.identity(stateDir, "edge-1")
	web := uniqueName("web")
	digest := hub.addArtifact(map[string]string{"web/cm.yaml": configMap("web")})

	// At the head of the outbox: a report on a release this cluster's desired state never
	// held, as an agent would have after its hub lost state.
	st, err := openState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	foreign := &agentv1.Report{ProducedAt: timestamppb.Now(), Statuses: []*agentv1.AssignmentStatus{{Release: "foreign", Phase: "Ready"}}}
	if err := st.enqueue(foreign, 0); err != nil {
		t.Fatal(err)
	}
	st.close()

	agent := startAgent(t, hub, stateDir)
	hub.publish(&agentv1.DesiredState{Cluster: "edge-1", Generation: 1, ExplicitRemovals: true,
		Assignments: []*agentv1.Assignment{{Release: web, Revision: "main@1", Digest: digest, Path: "web", Namespace: web, CreateNamespace: true, IntervalSeconds: 1}}})
	eventually.Within(t, time.Minute, hub.holds("web's report delivered behind the refused one", func() bool {
		return hub.reported(func(s *agentv1.AssignmentStatus) bool { return s.Release == web && s.Phase == "Ready" }) > 0
	}))
	if n := hub.reported(func(s *agentv1.AssignmentStatus) bool { return s.Release == "foreign" }); n != 0 {
		t.Errorf("the hub stored %d statuses of the foreign release", n)
	}
	var m dto.Metric
	if err := agent.metrics.reportsRefused.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("flotilla_agent_reports_refused_total = %v, want 1", got)
	}
}
