package fleetview

import (
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// The applied revision is the one whose objects the agent applied: a report of a revision it
// failed to apply before any object was applied names no applied revision.
func TestAppliedRevision(t *testing.T) {
	t.Parallel()
	d := Desired{Release: "web", Revision: "r2", Digest: "d2"}
	obs := Observed{LastSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reachable: true}
	tests := []struct {
		name           string
		report         *store.AssignmentStatus
		applied, tried string
	}{
		{name: "no report yet"},
		{name: "ready on desired", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Ready", Objects: 3}, applied: "r2", tried: "r2"},
		{name: "ready with no objects", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Ready"}, applied: "r2", tried: "r2"},
		{name: "still on the previous revision", report: &store.AssignmentStatus{Revision: "r1", Digest: "d1", Phase: "Ready", Objects: 3}, applied: "r1", tried: "r1"},
		{name: "failed before applying anything", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Failed", Error: "render: yaml"}, tried: "r2"},
		{name: "failed part-way", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Failed", Objects: 2, Error: "apply failed"}, applied: "r2", tried: "r2"},
		{name: "unhealthy after applying", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Failed", Health: "Failed", Objects: 3}, applied: "r2", tried: "r2"},
		{name: "waiting for its artifact", report: &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Pending"}, tried: "r2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Assignment("c1", d, tt.report, obs)
			if v.AppliedRevision != tt.applied || v.ReportedRevision != tt.tried {
				t.Errorf("applied %q reported %q, want %q and %q", v.AppliedRevision, v.ReportedRevision, tt.applied, tt.tried)
			}
			if (v.AppliedDigest == "") != (tt.applied == "") {
				t.Errorf("applied digest %q with applied revision %q", v.AppliedDigest, v.AppliedRevision)
			}
		})
	}
	// Skew still groups a cluster that applied nothing as failed on the revision it tried.
	failed := Assignment("c1", d, &store.AssignmentStatus{Revision: "r2", Digest: "d2", Phase: "Failed"}, obs)
	sk := Skew([]hubclient.AssignmentView{failed})
	if g := sk[0].Groups[0]; g.Revision != "r2" || !g.Failed || g.Desired {
		t.Errorf("skew group of a cluster that applied nothing = %+v, want failed on r2", g)
	}
}
