package fleetview

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestConditions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	ready := hubclient.AssignmentView{Release: "api", Phase: "Ready"}
	tests := []struct {
		name     string
		lastSeen time.Time
		status   []hubclient.AssignmentView
		want     []hubclient.Condition
	}{
		{
			name: "never seen, nothing assigned",
			want: []hubclient.Condition{
				{Type: "Reachable", Status: "False", Reason: "NeverSeen", Message: "no agent has connected for this cluster yet"},
				{Type: "Converged", Status: "True", Reason: "NothingAssigned", Message: "no release selects this cluster"},
				{Type: "Drifted", Status: "False", Reason: "NoDrift"},
				{Type: "Failed", Status: "False", Reason: "NoFailures"},
				{Type: "Conflicted", Status: "False", Reason: "NoConflicts"},
			},
		},
		{
			name: "healthy", lastSeen: now.Add(-5 * time.Second), status: []hubclient.AssignmentView{ready},
			want: []hubclient.Condition{
				{Type: "Reachable", Status: "True", Reason: "AgentReporting", Message: "agent heard from 5s ago"},
				{Type: "Converged", Status: "True", Reason: "AllReady", Message: "all 1 assignments Ready on their desired revision"},
				{Type: "Drifted", Status: "False", Reason: "NoDrift"},
				{Type: "Failed", Status: "False", Reason: "NoFailures"},
				{Type: "Conflicted", Status: "False", Reason: "NoConflicts"},
			},
		},
		{
			name: "silent, drifted, failed, conflicted", lastSeen: now.Add(-3 * time.Minute),
			status: []hubclient.AssignmentView{
				ready,
				{Release: "web", Phase: "Unreachable", ReportedPhase: "Failed", Error: "Deployment/web/web apply failed: denied", Drifted: true, Conflicts: 2},
			},
			want: []hubclient.Condition{
				{Type: "Reachable", Status: "False", Reason: "Silent", Message: "agent last heard from 3m0s ago (unreachable after 2m0s)"},
				{Type: "Converged", Status: "False", Reason: "NotReady", Message: "1 of 2 assignments not Ready: web Unreachable"},
				{Type: "Drifted", Status: "True", Reason: "DriftReported", Message: "drift in web"},
				{Type: "Failed", Status: "True", Reason: "ApplyFailed", Message: "web: Deployment/web/web apply failed: denied"},
				{Type: "Conflicted", Status: "True", Reason: "ConflictsReported", Message: "conflicts in web (2)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Conditions(tt.lastSeen, 2*time.Minute, now, tt.status)); diff != "" {
				t.Errorf("Conditions (-want +got):\n%s", diff)
			}
		})
	}
}
