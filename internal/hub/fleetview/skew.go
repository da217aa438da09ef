package fleetview

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubapi"
)

// Skew groups the assignments that should be identical (same release, desired revision and
// desired artifact) by the revision and artifact they applied. A cluster whose last report
// is Failed did not apply the revision it names (the agent reports the revision it tried):
// it is grouped apart, as failed on that revision, and counted as skewed. Results are ordered by
// release, then by desired revision; within one, the desired group comes first, then the
// others by size (largest first) and revision. Cluster names are sorted.
func Skew(assignments []hubapi.AssignmentView) []hubapi.ReleaseSkew {
	type cohortKey struct{ release, revision, digest string }
	type groupKey struct {
		revision, digest string
		failed           bool
	}
	cohorts := map[cohortKey]map[groupKey][]string{}
	for _, a := range assignments {
		ck := cohortKey{a.Release, a.DesiredRevision, a.DesiredDigest}
		if cohorts[ck] == nil {
			cohorts[ck] = map[groupKey][]string{}
		}
		gk := groupKey{a.AppliedRevision, a.AppliedDigest, a.ReportedPhase == hubapi.PhaseFailed}
		if gk.revision == "" && a.ReportedRevision != "" {
			// It applied nothing of the revision it tried: grouped as failed on that one.
			gk.revision, gk.digest = a.ReportedRevision, a.ReportedDigest
		}
		cohorts[ck][gk] = append(cohorts[ck][gk], a.Cluster)
	}
	out := make([]hubapi.ReleaseSkew, 0, len(cohorts))
	for ck, groups := range cohorts {
		rs := hubapi.ReleaseSkew{Release: ck.release, DesiredRevision: ck.revision, DesiredDigest: ck.digest, Groups: make([]hubapi.RevisionGroup, 0, len(groups))}
		for gk, clusters := range groups {
			sort.Strings(clusters)
			g := hubapi.RevisionGroup{Revision: gk.revision, Digest: gk.digest, Failed: gk.failed, Count: len(clusters), Clusters: clusters}
			g.Desired = gk.revision == ck.revision && gk.digest == ck.digest && !gk.failed
			rs.Clusters += g.Count
			if !g.Desired {
				rs.Skewed += g.Count
			}
			rs.Groups = append(rs.Groups, g)
		}
		sort.Slice(rs.Groups, func(i, j int) bool {
			a, b := rs.Groups[i], rs.Groups[j]
			if a.Desired != b.Desired {
				return a.Desired
			}
			if a.Count != b.Count {
				return a.Count > b.Count
			}
			if a.Revision != b.Revision {
				return a.Revision < b.Revision
			}
			if a.Digest != b.Digest {
				return a.Digest < b.Digest
			}
			return !a.Failed
		})
		out = append(out, rs)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		if a.DesiredRevision != b.DesiredRevision {
			return a.DesiredRevision < b.DesiredRevision
		}
		return a.DesiredDigest < b.DesiredDigest
	})
	return out
}
