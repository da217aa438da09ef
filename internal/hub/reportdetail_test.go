package hub

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestReportDetailBounded sends, over the agent protocol, a status with more object detail
// than the hub keeps: it is refused as invalid, naming the report, the release and the bound,
// before anything is stored.
func TestReportDetailBounded(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	a := th.addAgent(t, "echo", nil)
	st := &agentv1.AssignmentStatus{Release: "web", Phase: "Failed"}
	for range 201 {
		st.ObjectDetails = append(st.ObjectDetails, &agentv1.ObjectDetail{Version: "v1", Kind: "ConfigMap", Name: "x", Action: "drifted"})
	}
	_, err := a.client.Report(t.Context(), connect.NewRequest(&agentv1.ReportRequest{Reports: []*agentv1.Report{{Seq: 1, Statuses: []*agentv1.AssignmentStatus{st}}}}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `report 1: release "web": 201 object details; at most 200`) {
		t.Fatalf("got %v; want invalid_argument naming the report, the release and the bound", err)
	}
}
