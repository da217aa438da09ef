package hub

import (
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/agentapi/agentapitest"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/audit"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestReportNamesOnlyItsOwnReleases: an agent reports on the releases of its own desired
// state; a report naming another is refused with invalid_argument naming the release and the
// cluster, counted, and neither stored nor audited.
func TestReportNamesOnlyItsOwnReleases(t *testing.T) {
	t.Parallel()
	fleetDir, _ := replicaFleet(t)
	th := startHub(t, fleetDir, nil)
	a := th.addAgent(t, "edge", map[string]string{"env": "test"})
	as := agentapitest.WaitAssignment(t, a.client)
	report := func(seq uint64, release string) error {
		r := &agentv1.Report{Seq: seq, ProducedAt: timestamppb.Now(), Statuses: []*agentv1.AssignmentStatus{
			{Release: release, Revision: as.GetRevision(), Digest: as.GetDigest(), Phase: "Ready"},
		}}
		_, err := a.client.Report(t.Context(), connect.NewRequest(&agentv1.ReportRequest{Reports: []*agentv1.Report{r}}))
		return err
	}
	if err := report(1, "web"); err != nil {
		t.Fatalf("report on its own release web: %v", err)
	}
	err := report(2, "intruder")
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `release "intruder" is not in the desired state of cluster "edge"`) {
		t.Fatalf("report on release intruder: %v; want invalid_argument naming the release and the cluster", err)
	}
	if got := metricValue(th.Hub, "flotilla_hub_reports_refused_total"); got != "1" {
		t.Errorf("flotilla_hub_reports_refused_total = %s, want 1", got)
	}
	st, err := th.api.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Assignments {
		if v.Release == "intruder" {
			t.Errorf("the refused report was stored: %+v", v)
		}
	}
	recs, err := th.audit.List(t.Context(), audit.Filter{Cluster: "edge", Action: "apply"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Release == "intruder" {
			t.Errorf("the refused report was audited: %+v", r)
		}
	}
}
