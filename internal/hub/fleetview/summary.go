package fleetview

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// Summarize counts assignments per release, in release order. A release's DesiredRevision is
// the one most of its assignments desire (ties: the greatest, which for a change in flight
// is as good a guess as any and keeps the output stable).
func Summarize(assignments []hubclient.AssignmentView) []hubclient.ReleaseSummary {
	byRelease := map[string]*hubclient.ReleaseSummary{}
	revisions := map[string]map[string]int{}
	for _, a := range assignments {
		s := byRelease[a.Release]
		if s == nil {
			s = &hubclient.ReleaseSummary{Release: a.Release}
			byRelease[a.Release] = s
			revisions[a.Release] = map[string]int{}
		}
		s.Clusters++
		revisions[a.Release][a.DesiredRevision]++
		switch a.Phase {
		case hubclient.PhaseReady:
			s.Ready++
		case hubclient.PhaseFailed:
			s.Failed++
		case hubclient.PhaseUnreachable:
			s.Unreachable++
		case hubclient.PhasePending:
			s.Pending++
		default:
			s.Progressing++
		}
		if a.Drifted {
			s.Drifted++
		}
		if a.Conflicts > 0 {
			s.Conflicted++
		}
	}
	out := make([]hubclient.ReleaseSummary, 0, len(byRelease))
	for name, s := range byRelease {
		best, n := "", -1
		for rev, c := range revisions[name] {
			if c > n || (c == n && rev > best) {
				best, n = rev, c
			}
		}
		s.DesiredRevision = best
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Release < out[j].Release })
	return out
}
