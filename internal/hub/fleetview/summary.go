package fleetview

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubapi"
)

// Summarize counts assignments per release, in release order. A release's DesiredRevision is
// the one most of its assignments desire (ties: the greatest, which for a change in flight
// is as good a guess as any and keeps the output stable).
func Summarize(assignments []hubapi.AssignmentView) []hubapi.ReleaseSummary {
	byRelease := map[string]*hubapi.ReleaseSummary{}
	revisions := map[string]map[string]int{}
	for _, a := range assignments {
		s := byRelease[a.Release]
		if s == nil {
			s = &hubapi.ReleaseSummary{Release: a.Release}
			byRelease[a.Release] = s
			revisions[a.Release] = map[string]int{}
		}
		s.Clusters++
		revisions[a.Release][a.DesiredRevision]++
		switch a.Phase {
		case hubapi.PhaseReady:
			s.Ready++
		case hubapi.PhaseFailed:
			s.Failed++
		case hubapi.PhaseUnreachable:
			s.Unreachable++
		case hubapi.PhasePending:
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
	out := make([]hubapi.ReleaseSummary, 0, len(byRelease))
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
