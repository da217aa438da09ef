package notify

import (
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestAssignmentOf(t *testing.T) {
	t.Parallel()
	seen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		v         hubclient.AssignmentView
		wantPhase hubclient.Phase
		wantSeen  time.Time
	}{
		{name: "reported phase kept", v: hubclient.AssignmentView{Phase: "Failed", ReportedPhase: "Failed", LastSeen: &seen, Reachable: true}, wantPhase: "Failed", wantSeen: seen},
		{name: "an unreachable cluster keeps its last reported phase", v: hubclient.AssignmentView{Phase: hubclient.PhaseUnreachable, ReportedPhase: "Failed", LastSeen: &seen}, wantPhase: "Failed", wantSeen: seen},
		{name: "unreachable before any report", v: hubclient.AssignmentView{Phase: hubclient.PhaseUnreachable, LastSeen: &seen}, wantPhase: hubclient.PhaseUnreachable, wantSeen: seen},
		{name: "never seen", v: hubclient.AssignmentView{Phase: hubclient.PhasePending}, wantPhase: hubclient.PhasePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := assignmentOf(tt.v, map[string]string{"env": "prod"})
			if a.Phase != tt.wantPhase || !a.LastSeen.Equal(tt.wantSeen) || a.ClusterLabels["env"] != "prod" || a.Reachable != tt.v.Reachable {
				t.Errorf("assignmentOf = %+v; want phase %s, last seen %v", a, tt.wantPhase, tt.wantSeen)
			}
		})
	}
}
