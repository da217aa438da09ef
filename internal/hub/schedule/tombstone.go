package schedule

import (
	"github.com/flotilla/flotilla/internal/window"
	"slices"
	"strings"
)

// Reasons a release leaves a cluster: the only two the hub can name.
const (
	// ReasonReleaseDeleted: the release is no longer in the fleet configuration.
	ReasonReleaseDeleted = "release-deleted"
	// ReasonNotSelected: the release's targets no longer select the cluster (a relabel, a
	// changed selector).
	ReasonNotSelected = "not-selected"
)

// MaxTombstones bounds the tombstones one cluster's document keeps; the oldest go first. A
// tombstone only matters until the cluster's agent has seen it, and an agent that was away for
// more than this many removals refuses the document and prunes nothing (the safe side).
const MaxTombstones = 256

// Tombstone records that a release left a cluster: the only thing that lets an agent prune a
// whole release.
type Tombstone struct {
	Release string `json:"release"`
	// Reason is ReasonReleaseDeleted or ReasonNotSelected.
	Reason string `json:"reason"`
	// FleetRevision is the fleet configuration revision whose scheduling removed the release.
	FleetRevision string `json:"fleetRevision"`
	// Revision and Digest are what the release was at when it left.
	Revision string `json:"revision,omitempty"`
	Digest   string `json:"digest,omitempty"`
	// Actor is who made the change that removed it, when the hub knows (a relabel).
	Actor string `json:"actor,omitempty"`
}

// Document is one cluster's desired state as the hub stores it: what is assigned, and the
// tombstones of what left.
type Document struct {
	Assignments []Assignment `json:"assignments"`
	// Removed holds tombstones oldest first; never a release that Assignments holds.
	Removed []Tombstone `json:"removed,omitempty"`
	// Gates are the windows, freezes and suspensions that apply to the cluster.
	Gates []Gate `json:"gates,omitempty"`
	// Syncs are the pending requests to reconcile now.
	Syncs []SyncRequest `json:"syncs,omitempty"`
}

// Gate holds back some changes of some releases on a cluster while it is closed; see the
// Gate message of the agent protocol.
type Gate = window.Gate

// Kinds of gates.
const (
	GateWindow  = window.KindWindow
	GateFreeze  = window.KindFreeze
	GateSuspend = window.KindSuspend
)

// SyncRequest asks the agent to reconcile now; see the SyncRequest message.
type SyncRequest struct {
	ID       string `json:"id"`
	Release  string `json:"release,omitempty"`
	Override bool   `json:"override,omitempty"`
	Actor    string `json:"actor,omitempty"`
}

// removals returns the tombstones of the cluster's next document: those of prev still not
// assigned again, then one for every release of prev that assigned no longer holds, oldest
// first and at most MaxTombstones. assigned is sorted by release, as Schedule makes it; why
// names the reason a release is not assigned.
func removals(prev Document, assigned []Assignment, fleetRevision string, why func(release string) string) []Tombstone {
	holds := func(release string) bool {
		_, found := slices.BinarySearchFunc(assigned, release, func(a Assignment, r string) int { return strings.Compare(a.Release, r) })
		return found
	}
	var out []Tombstone
	for _, t := range prev.Removed {
		if !holds(t.Release) {
			out = append(out, t)
		}
	}
	for _, a := range prev.Assignments {
		if holds(a.Release) {
			continue
		}
		out = slices.DeleteFunc(out, func(t Tombstone) bool { return t.Release == a.Release })
		out = append(out, Tombstone{
			Release: a.Release, Reason: why(a.Release), FleetRevision: fleetRevision,
			Revision: a.Revision, Digest: a.Digest,
		})
	}
	if len(out) > MaxTombstones {
		out = out[len(out)-MaxTombstones:]
	}
	return out
}
