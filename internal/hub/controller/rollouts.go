package controller

import (
	"context"
	"maps"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// applyRollouts moves every release that has a rollout one step and sets, per cluster, the
// artifact its rollout assigns there instead of the newest (rollout/fleetstep does the
// work). It remembers when the rollouts are due again and which artifacts they keep, and
// has a reschedule retried when a rollout's state could not be read or stored.
func (c *Controller) applyRollouts(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]desired.Document) {
	c.mu.Lock()
	arts := maps.Clone(c.artifacts)
	c.mu.Unlock()
	out := c.rollouts.Apply(ctx, c.clock.Now(), fleet, arts, clusters, plan, previous, c.relabels.peek())
	c.rolloutDue, c.rolloutKeep = out.Due, out.Keep
	for cluster, actor := range out.Relabelled {
		// A tombstone a rollout held back goes out now: it names who relabelled the
		// cluster, unless someone relabelled it again since (their change is the newer).
		c.relabels.noteIfNone(cluster, actor)
	}
	if out.Retry {
		c.retryAt = c.clock.Now().Add(retryAfterFailure)
	}
}

// rolloutsDue reports whether a rollout's bake, deadline or window is due.
func (c *Controller) rolloutsDue() bool {
	return !c.rolloutDue.IsZero() && !c.clock.Now().Before(c.rolloutDue)
}

// peek returns who relabelled each cluster since the last reschedule, keeping it noted.
func (r *relabels) peek() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.by)
}

// noteIfNone notes actor for cluster unless someone is noted already.
func (r *relabels) noteIfNone(cluster, actor string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]string{}
	}
	if r.by[cluster] == "" {
		r.by[cluster] = actor
	}
}
