package fleetstep

import (
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// findAssignment returns the assignment of release in as (sorted by release).
func findAssignment(as []desired.Assignment, release string) (int, bool) {
	return slices.BinarySearchFunc(as, release, func(a desired.Assignment, r string) int { return strings.Compare(a.Release, r) })
}

// heldArtifact is the artifact an assignment holds as a rollout sees it: the source's artifact, also
// where the cluster was given a per-path artifact packed from it (SourceDigest).
func heldArtifact(a desired.Assignment) rollout.Artifact {
	d := a.Digest
	if a.SourceDigest != "" {
		d = a.SourceDigest
	}
	return rollout.Artifact{Digest: d, Revision: a.Revision, URL: a.URL}
}

// overrideAssignment sets the artifact of release's assignment on cluster to d's: a zero
// artifact leaves the release out (the cluster never had it, so no tombstone is written).
func overrideAssignment(plan *schedule.Plan, cluster, release string, d rollout.Decision) {
	as := plan.Assignments[cluster]
	i, ok := findAssignment(as, release)
	if !ok {
		return
	}
	if d.Artifact.Digest == "" {
		plan.Assignments[cluster] = slices.Delete(slices.Clone(as), i, i+1)
		return
	}
	a := &as[i]
	a.Digest, a.Revision, a.URL, a.Rollout = d.Artifact.Digest, d.Artifact.Revision, d.Artifact.URL, d.Line
	a.SourceDigest = "" // a source's artifact: narrowed again after the rollouts
}

// holdRollout keeps release at what each cluster had: its previous assignment's artifact,
// or no assignment for a cluster that never had it. A cluster the release no longer selects
// keeps it too: its removal waits for a rollout state that could be read and stored. It
// returns those clusters.
func holdRollout(plan *schedule.Plan, release string, previous map[string]desired.Document) []string {
	var leaving []string
	for cluster, doc := range previous {
		if _, ok := findAssignment(doc.Assignments, release); !ok {
			continue
		}
		if _, ok := findAssignment(plan.Assignments[cluster], release); !ok {
			keepAssignment(plan, cluster, release, previous, "removal held: the rollout's state could not be read or stored")
			leaving = append(leaving, cluster)
		}
	}
	for cluster := range plan.Assignments {
		if slices.Contains(leaving, cluster) {
			continue
		}
		d := rollout.Decision{Line: "held: the rollout's state could not be read or stored"}
		if a, ok := findAssignment(previous[cluster].Assignments, release); ok {
			d.Artifact = heldArtifact(previous[cluster].Assignments[a])
		}
		overrideAssignment(plan, cluster, release, d)
	}
	return leaving
}
