package fleetview

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestAssignmentPhase(t *testing.T) {
	t.Parallel()
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := Desired{Release: "web", Revision: "r2", Digest: "d2"}
	reachable := Observed{LastSeen: seen, Reachable: true}
	tests := []struct {
		name              string
		reported          *store.AssignmentStatus
		obs               Observed
		phase, reportedAs hubclient.Phase
	}{
		{name: "no agent yet", obs: Observed{}, phase: "Pending"},
		{name: "agent seen, no report yet", obs: reachable, phase: "Pending"},
		{name: "ready on desired", reported: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Ready"}, obs: reachable, phase: "Ready", reportedAs: "Ready"},
		{name: "ready on the previous revision is progressing", reported: &store.AssignmentStatus{Revision: "r1", Digest: "d1", Phase: "Ready"}, obs: reachable, phase: "Progressing", reportedAs: "Ready"},
		{name: "applying is progressing", reported: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Applying"}, obs: reachable, phase: "Progressing", reportedAs: "Applying"},
		{name: "failed", reported: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Failed"}, obs: reachable, phase: "Failed", reportedAs: "Failed"},
		{name: "silent cluster is unreachable, never ready", reported: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Ready"}, obs: Observed{LastSeen: seen}, phase: "Unreachable", reportedAs: "Ready"},
		{name: "silent cluster without report is unreachable", obs: Observed{LastSeen: seen}, phase: "Unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Assignment("c1", d, tt.reported, tt.obs)
			if v.Phase != tt.phase || v.ReportedPhase != tt.reportedAs {
				t.Errorf("phase %q reported %q, want %q and %q", v.Phase, v.ReportedPhase, tt.phase, tt.reportedAs)
			}
			if v.DesiredRevision != "r2" || v.DesiredDigest != "d2" || v.Release != "web" || v.Cluster != "c1" {
				t.Errorf("desired side of the view = %+v", v)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	in := []hubclient.AssignmentView{
		{Release: "web", Cluster: "a", DesiredRevision: "r2", Phase: "Ready"},
		{Release: "web", Cluster: "b", DesiredRevision: "r2", Phase: "Ready", Drifted: true},
		{Release: "web", Cluster: "c", DesiredRevision: "r2", Phase: "Progressing"},
		{Release: "web", Cluster: "d", DesiredRevision: "r1", Phase: "Failed", Conflicts: 2},
		{Release: "web", Cluster: "e", DesiredRevision: "r2", Phase: "Unreachable", Drifted: true},
		{Release: "api", Cluster: "a", DesiredRevision: "x", Phase: "Pending"},
	}
	want := []hubclient.ReleaseSummary{
		{Release: "api", DesiredRevision: "x", Clusters: 1, Pending: 1},
		{Release: "web", DesiredRevision: "r2", Clusters: 5, Ready: 2, Progressing: 1, Failed: 1, Unreachable: 1, Drifted: 2, Conflicted: 1},
	}
	if diff := cmp.Diff(want, Summarize(in)); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
	if got := Summarize(nil); len(got) != 0 || got == nil {
		t.Errorf("Summarize(nil) = %#v, want an empty list (JSON [])", got)
	}
}
