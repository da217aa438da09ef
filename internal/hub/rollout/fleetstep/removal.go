package fleetstep

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// removeAlongWaves holds back the tombstones of a deleted release that had a rollout, wave by
// wave (rollout.StepRemoval): a cluster whose wave has not started keeps its assignment. It
// reports false when there is nothing to hold (no rollout spec recorded, no cluster holds
// the release any more, the removal completed): the caller then deletes the record.
func (s *Stepper) removeAlongWaves(ctx context.Context, release string, rec store.Record, in inputs,
	clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]desired.Document) bool {
	var st rollout.State
	if err := json.Unmarshal(rec.Data, &st); err != nil || st.Spec == nil {
		return false
	}
	input := rollout.Input{Now: s.now}
	for _, cl := range clusters {
		i, ok := findAssignment(previous[cl.Name].Assignments, release)
		if !ok {
			continue
		}
		a := previous[cl.Name].Assignments[i]
		input.Clusters = append(input.Clusters, rollout.Cluster{Name: cl.Name, Labels: cl.Labels, Reachable: in.reachable[cl.Name],
			Had: heldArtifact(a)})
	}
	if len(input.Clusters) == 0 {
		return false // every tombstone went out
	}
	st2, res, ok := s.cas(ctx, release, rec, true, func(s *rollout.State) rollout.Result { return rollout.StepRemoval(s, input) })
	if !ok {
		// Never prune on a state that could not be stored: every cluster keeps the release.
		for _, rc := range input.Clusters {
			keepAssignment(plan, rc.Name, release, previous, "removal held: its state could not be stored")
		}
		return true
	}
	s.notifyActions(release, &st2, res.Events)
	for _, e := range res.Events {
		s.announce(ctx, release, &st2, e)
	}
	for cluster, d := range res.Assign {
		if d.Artifact.Digest != "" {
			keepAssignment(plan, cluster, release, previous, d.Line)
		}
	}
	s.due(res.Next)
	return true
}

// keepAssignment puts back the previous assignment of release on cluster, which Schedule
// left out, and takes back the tombstone it wrote for it.
func keepAssignment(plan *schedule.Plan, cluster, release string, previous map[string]desired.Document, line string) {
	i, ok := findAssignment(previous[cluster].Assignments, release)
	if !ok {
		return
	}
	a := previous[cluster].Assignments[i]
	a.Rollout = line
	as := plan.Assignments[cluster]
	if j, found := findAssignment(as, release); !found {
		plan.Assignments[cluster] = slices.Insert(slices.Clone(as), j, a)
	}
	rm := slices.DeleteFunc(slices.Clone(plan.Removed[cluster]), func(t desired.Tombstone) bool {
		return strings.Compare(t.Release, release) == 0
	})
	if len(rm) > 0 {
		plan.Removed[cluster] = rm
	} else {
		delete(plan.Removed, cluster)
	}
}
