package schedule

import (
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
)

// MaxTombstones bounds the tombstones one cluster's document keeps; the oldest go first. A
// tombstone only matters until the cluster's agent has seen it, and an agent that was away for
// more than this many removals refuses the document and prunes nothing (the safe side).
const MaxTombstones = 256

// removals returns the tombstones of the cluster's next document: those of prev still not
// assigned again, then one for every release of prev that assigned no longer holds, oldest
// first and at most MaxTombstones. assigned is sorted by release, as Schedule makes it; why
// names the reason a release is not assigned.
func removals(prev desired.Document, assigned []desired.Assignment, fleetRevision string, why func(release string) string) []desired.Tombstone {
	holds := func(release string) bool {
		_, found := slices.BinarySearchFunc(assigned, release, func(a desired.Assignment, r string) int { return strings.Compare(a.Release, r) })
		return found
	}
	var out []desired.Tombstone
	for _, t := range prev.Removed {
		if !holds(t.Release) {
			out = append(out, t)
		}
	}
	for _, a := range prev.Assignments {
		if holds(a.Release) {
			continue
		}
		out = slices.DeleteFunc(out, func(t desired.Tombstone) bool { return t.Release == a.Release })
		out = append(out, desired.Tombstone{
			Release: a.Release, Reason: why(a.Release), FleetRevision: fleetRevision,
			Revision: a.Revision, Digest: a.Digest,
		})
	}
	if len(out) > MaxTombstones {
		out = out[len(out)-MaxTombstones:]
	}
	return out
}
