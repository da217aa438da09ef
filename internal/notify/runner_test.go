package notify

import (
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hubapi"
)

func TestAssignmentOf(t *testing.T) {
	seen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		v         hubapi.AssignmentView
		wantPhase hubapi.Phase
		wantSeen  time.Time
	}{
		{name: "reported phase kept", v: hubapi.AssignmentView{Phase: "Failed", ReportedPhase: "Failed", LastSeen: &seen, Reachable: true}, wantPhase: "Failed", wantSeen: seen},
		{name: "an unreachable cluster keeps its last reported phase", v: hubapi.AssignmentView{Phase: hubapi.PhaseUnreachable, ReportedPhase: "Failed", LastSeen: &seen}, wantPhase: "Failed", wantSeen: seen},
		{name: "unreachable before any report", v: hubapi.AssignmentView{Phase: hubapi.PhaseUnreachable, LastSeen: &seen}, wantPhase: hubapi.PhaseUnreachable, wantSeen: seen},
		{name: "never seen", v: hubapi.AssignmentView{Phase: hubapi.PhasePending}, wantPhase: hubapi.PhasePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assignmentOf(tt.v, map[string]string{"env": "prod"})
			if a.Phase != tt.wantPhase || !a.LastSeen.Equal(tt.wantSeen) || a.ClusterLabels["env"] != "prod" || a.Reachable != tt.v.Reachable {
				t.Errorf("assignmentOf = %+v; want phase %s, last seen %v", a, tt.wantPhase, tt.wantSeen)
			}
		})
	}
}
