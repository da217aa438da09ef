package fleetview

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// waitingReport is a status as the hub stores an agent's report: the columns, and the whole
// report as protojson in Detail.
func waitingReport(t *testing.T, r *agentv1.AssignmentStatus) *store.AssignmentStatus {
	t.Helper()
	detail, err := protojson.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return &store.AssignmentStatus{
		Cluster: "c1", Release: r.GetRelease(), Revision: r.GetRevision(), Digest: r.GetDigest(),
		Phase: r.GetPhase(), Health: r.GetHealth(), Objects: int(r.GetObjects()), Detail: detail,
	}
}

// An agent that a window, a freeze or a release it depends on holds back reports Waiting with
// the revision still in force and the pending one: the view says Waiting and why while the
// pending revision is the desired one, and Progressing once the hub desires another.
func TestAssignmentWaiting(t *testing.T) {
	t.Parallel()
	const window = `window "business-hours" opens 22:00 Europe/Berlin`
	d := Desired{Release: "web", Revision: "r2", Digest: "d2"}
	seen := Observed{LastSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reachable: true}
	tests := []struct {
		name    string
		report  *agentv1.AssignmentStatus
		detail  string // replaces the report's detail when set
		obs     Observed
		phase   hubclient.Phase
		waiting string
		applied string
	}{
		{
			name:   "a window holds the desired revision back",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r1", Digest: "d1", Phase: "Waiting", Health: "Current", Objects: 3, Waiting: window, PendingRevision: "r2", PendingDigest: "d2"},
			phase:  hubclient.PhaseWaiting, waiting: window, applied: "r1",
		},
		{
			name:   "a release waits for the one it depends on before its first apply",
			report: &agentv1.AssignmentStatus{Release: "web", Phase: "Waiting", Waiting: `release "db" is not Ready`, PendingRevision: "r2", PendingDigest: "d2"},
			phase:  hubclient.PhaseWaiting, waiting: `release "db" is not Ready`,
		},
		{
			name:   "a freeze holds self-heal on the desired revision",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r2", Digest: "d2", Phase: "Waiting", Objects: 3, Waiting: `freeze "incident-42" blocks self-heal`},
			phase:  hubclient.PhaseWaiting, waiting: `freeze "incident-42" blocks self-heal`, applied: "r2",
		},
		{
			name:   "the hub desires a newer revision than the one held back",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r0", Digest: "d0", Phase: "Waiting", Objects: 3, Waiting: window, PendingRevision: "r1", PendingDigest: "d1"},
			phase:  hubclient.PhaseProgressing, waiting: window, applied: "r0",
		},
		{
			name:   "an unreachable cluster is not Waiting on old news",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r1", Digest: "d1", Phase: "Waiting", Objects: 3, Waiting: window, PendingRevision: "r2", PendingDigest: "d2"},
			obs:    Observed{LastSeen: seen.LastSeen}, phase: hubclient.PhaseUnreachable, waiting: window, applied: "r1",
		},
		{
			name:   "a Waiting report without a reason still waits",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r2", Digest: "d2", Phase: "Waiting"},
			phase:  hubclient.PhaseWaiting, waiting: "the agent did not say what for", applied: "r2",
		},
		{
			name:   "an unreadable report says so",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r2", Digest: "d2", Phase: "Waiting"},
			detail: `{"waiting": 7}`,
			phase:  hubclient.PhaseWaiting, waiting: "the agent's report is unreadable", applied: "r2",
		},
		{
			name:   "a Ready report has no waiting line",
			report: &agentv1.AssignmentStatus{Release: "web", Revision: "r2", Digest: "d2", Phase: "Ready", Objects: 3},
			phase:  hubclient.PhaseReady, applied: "r2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := waitingReport(t, tt.report)
			if tt.detail != "" {
				s.Detail = []byte(tt.detail)
			}
			obs := seen
			if !tt.obs.LastSeen.IsZero() {
				obs = tt.obs
			}
			v := Assignment("c1", d, s, obs)
			if v.Phase != tt.phase {
				t.Errorf("phase %s, want %s", v.Phase, tt.phase)
			}
			if tt.waiting == "" && v.Waiting != "" || !strings.HasPrefix(v.Waiting, tt.waiting) {
				t.Errorf("waiting %q, want %q", v.Waiting, tt.waiting)
			}
			if v.AppliedRevision != tt.applied {
				t.Errorf("applied %q, want %q", v.AppliedRevision, tt.applied)
			}
			if v.ReportedPhase != hubclient.Phase(tt.report.GetPhase()) {
				t.Errorf("reported phase %q, want %q", v.ReportedPhase, tt.report.GetPhase())
			}
		})
	}
}

// The rollout's line is the scheduler's, shown whatever the agent reported, and before it
// reported at all.
func TestAssignmentRollout(t *testing.T) {
	t.Parallel()
	d := Desired{Release: "web", Revision: "r1", Digest: "d1", Rollout: "wave eu waits for canary"}
	obs := Observed{LastSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reachable: true}
	for _, report := range []*store.AssignmentStatus{nil, {Revision: "r1", Digest: "d1", Phase: "Ready"}} {
		v := Assignment("c1", d, report, obs)
		if v.Rollout != d.Rollout || v.Waiting != "" {
			t.Errorf("report %+v: rollout %q waiting %q, want %q and none", report, v.Rollout, v.Waiting, d.Rollout)
		}
	}
	if v := Assignment("c1", Desired{Release: "web", Revision: "r1", Digest: "d1"}, nil, obs); v.Rollout != "" {
		t.Errorf("without a rollout: rollout %q", v.Rollout)
	}
}
