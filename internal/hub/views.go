package hub

import (
	"context"
	"fmt"
	"sort"

	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
)

// fleetStatus computes the whole fleet's status from the store, the scheduler's desired
// states and the last-seen times: the one view that status, the dashboard and notifications
// share.
func (h *Hub) fleetStatus(ctx context.Context) (hubapi.StatusView, error) {
	clusters, err := h.store.ListClusters(ctx)
	if err != nil {
		return hubapi.StatusView{}, err
	}
	statuses, err := h.store.ListStatuses(ctx)
	if err != nil {
		return hubapi.StatusView{}, err
	}
	reported := map[[2]string]store.AssignmentStatus{}
	for _, s := range statuses {
		reported[[2]string{s.Cluster, s.Release}] = s
	}
	out := hubapi.StatusView{Sources: []hubapi.SourceView{}, Problems: []string{}, Assignments: []hubapi.AssignmentView{}}
	if fs, err := h.store.GetFleetStatus(ctx); err == nil {
		out.Fleet = hubapi.FleetStatus{Revision: fs.Revision, Error: fs.Error, UpdatedAt: fs.UpdatedAt}
	}
	srcs, _ := h.store.ListSourceStatuses(ctx)
	for _, s := range srcs {
		out.Sources = append(out.Sources, hubapi.SourceView{Name: s.Name, URL: s.URL, Revision: s.Revision, Digest: s.Digest, Error: s.Error, CheckedAt: s.CheckedAt})
	}
	h.ctrl.mu.Lock()
	for _, p := range h.ctrl.problems {
		out.Problems = append(out.Problems, fmt.Sprintf("release %s on cluster %s: %s", p.Release, p.Cluster, p.Message))
	}
	h.ctrl.mu.Unlock()
	for _, c := range clusters {
		c.LastSeen, c.AgentVersion = h.seen.get(c)
		ds, err := h.store.GetDesiredState(ctx, c.Name)
		if err != nil {
			continue
		}
		as, err := schedule.Decode(ds.Document)
		if err != nil {
			continue
		}
		for _, a := range as {
			v := hubapi.AssignmentView{Release: a.Release, Cluster: c.Name, DesiredRevision: a.Revision, Phase: "Pending"}
			if !c.LastSeen.IsZero() {
				t := c.LastSeen
				v.LastSeen = &t
				v.Reachable = h.reachable(t)
			}
			if s, ok := reported[[2]string{c.Name, a.Release}]; ok {
				v.AppliedRevision, v.Health, v.Drifted, v.Conflicts, v.Objects, v.Error = s.Revision, s.Health, s.Drifted, s.Conflicts, s.Objects, s.Error
				v.Phase = s.Phase
				if s.Digest != a.Digest || s.Revision != a.Revision {
					// The agent has not acted on the desired revision yet.
					v.Phase = "Progressing"
				}
			}
			out.Assignments = append(out.Assignments, v)
		}
	}
	sort.Slice(out.Assignments, func(i, j int) bool {
		a, b := out.Assignments[i], out.Assignments[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		return a.Cluster < b.Cluster
	})
	return out, nil
}
