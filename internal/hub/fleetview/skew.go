package fleetview

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// Skew groups the assignments that should be alike (same release and desired revision) by
// the revision they applied and whether they applied their own desired artifact. Clusters of
// one release may each have an artifact of their own (a path per cluster packs one per
// cluster), so artifacts are compared per cluster, never across clusters; a digest shown for
// a cohort or group is the one its clusters share, "" when they differ. A cluster whose last
// report is Failed did not apply the revision it names (the agent reports the revision it
// tried): it is grouped apart, as failed on that revision, and counted as skewed. Results are
// ordered by release, then by desired revision; within one, the desired group comes first,
// then the others by size (largest first) and revision. Cluster names are sorted.
func Skew(assignments []hubclient.AssignmentView) []hubclient.ReleaseSkew {
	type cohortKey struct{ release, revision string }
	type groupKey struct {
		revision  string
		atDesired bool // applied the cluster's own desired artifact
		failed    bool
	}
	type group struct {
		digests  sameString
		clusters []string
	}
	type cohort struct {
		digests sameString
		groups  map[groupKey]*group
	}
	cohorts := map[cohortKey]*cohort{}
	for _, a := range assignments {
		ck := cohortKey{a.Release, a.DesiredRevision}
		c := cohorts[ck]
		if c == nil {
			c = &cohort{groups: map[groupKey]*group{}}
			cohorts[ck] = c
		}
		c.digests.add(a.DesiredDigest)
		revision, digest := a.AppliedRevision, a.AppliedDigest
		if revision == "" && a.ReportedRevision != "" {
			// It applied nothing of the revision it tried: grouped as failed on that one.
			revision, digest = a.ReportedRevision, a.ReportedDigest
		}
		gk := groupKey{revision, digest != "" && digest == a.DesiredDigest, a.ReportedPhase == hubclient.PhaseFailed}
		g := c.groups[gk]
		if g == nil {
			g = &group{}
			c.groups[gk] = g
		}
		g.digests.add(digest)
		g.clusters = append(g.clusters, a.Cluster)
	}
	out := make([]hubclient.ReleaseSkew, 0, len(cohorts))
	for ck, c := range cohorts {
		rs := hubclient.ReleaseSkew{Release: ck.release, DesiredRevision: ck.revision, DesiredDigest: c.digests.value(), Groups: make([]hubclient.RevisionGroup, 0, len(c.groups))}
		for gk, gr := range c.groups {
			clusters := gr.clusters
			sort.Strings(clusters)
			g := hubclient.RevisionGroup{Revision: gk.revision, Digest: gr.digests.value(), Failed: gk.failed, Count: len(clusters), Clusters: clusters}
			g.Desired = gk.revision == ck.revision && gk.atDesired && !gk.failed
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

// sameString is the one value added to it, or "" once two different ones were.
type sameString struct {
	v      string
	n      int
	varied bool
}

func (s *sameString) add(v string) {
	if s.n > 0 && v != s.v {
		s.varied = true
	}
	s.v = v
	s.n++
}

func (s *sameString) value() string {
	if s.varied {
		return ""
	}
	return s.v
}
