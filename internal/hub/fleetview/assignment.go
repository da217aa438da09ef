package fleetview

import (
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Desired is what one cluster should run for one release.
type Desired struct {
	Release  string
	Revision string
	Digest   string
	// Rollout is where the release's rollout holds this cluster (desired.Assignment.Rollout).
	Rollout string
}

// Observed is what the hub knows of the cluster: when its agent was last seen (zero: never)
// and whether that is within the unreachable threshold.
type Observed struct {
	LastSeen  time.Time
	Reachable bool
}

// Assignment merges one desired assignment with the agent's last report (nil: none yet) into
// the view `flotilla status` shows; see the package documentation for the phases.
func Assignment(cluster string, d Desired, reported *store.AssignmentStatus, o Observed) hubclient.AssignmentView {
	v := hubclient.AssignmentView{
		Release: d.Release, Cluster: cluster, DesiredRevision: d.Revision, DesiredDigest: d.Digest,
		Phase: hubclient.PhasePending, Rollout: d.Rollout,
	}
	if !o.LastSeen.IsZero() {
		t := o.LastSeen
		v.LastSeen = &t
		v.Reachable = o.Reachable
	}
	if s := reported; s != nil {
		v.ReportedRevision, v.ReportedDigest = s.Revision, s.Digest
		if appliedSomething(s) {
			v.AppliedRevision, v.AppliedDigest = s.Revision, s.Digest
		}
		v.Health, v.Drifted, v.Conflicts, v.Objects, v.Error = s.Health, s.Drifted, s.Conflicts, s.Objects, s.Error
		v.ReportedPhase = hubclient.Phase(s.Phase)
		v.Phase = v.ReportedPhase
		if !s.ReportedAt.IsZero() {
			t := s.ReportedAt
			v.ReportedAt = &t
		}
		switch v.ReportedPhase {
		case hubclient.PhaseApplying, "":
			v.Phase = hubclient.PhaseProgressing
		}
		onDesired := s.Digest == d.Digest && s.Revision == d.Revision
		if v.ReportedPhase == hubclient.PhaseWaiting {
			// A waiting agent reports the revision still in force and the one held back
			// as pending: it is waiting on the desired one when that is what is pending.
			h := heldBy(s)
			v.Waiting = h.message
			onDesired = onDesired || h.digest == d.Digest && h.pendingRevision == d.Revision
		}
		if !onDesired {
			// The agent has not acted on the desired revision yet.
			v.Phase = hubclient.PhaseProgressing
		}
	}
	if v.LastSeen != nil && !v.Reachable {
		v.Phase = hubclient.PhaseUnreachable
	}
	return v
}

// appliedSomething reports whether the report's revision was applied, even in part: an agent
// reports the revision it tried, and one that failed, or is waiting for its artifact, with no
// object in its result applied nothing of it (download, render and validation come first).
func appliedSomething(s *store.AssignmentStatus) bool {
	switch hubclient.Phase(s.Phase) {
	case hubclient.PhaseFailed, hubclient.PhasePending:
		return s.Objects > 0
	}
	return true
}
