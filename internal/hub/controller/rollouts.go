package controller

import (
	"context"
	"maps"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// applyRollouts moves every release that has a rollout one step and sets, per cluster, the
// artifact its rollout assigns there instead of the newest (rollout/fleetstep does the
// work). It remembers when the rollouts are due again and which artifacts they keep, and
// has a reschedule retried when a rollout's state could not be read or stored.
func (c *Controller) applyRollouts(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]schedule.Document) {
	c.mu.Lock()
	arts := maps.Clone(c.artifacts)
	c.mu.Unlock()
	out := c.rollouts.Apply(ctx, c.clock.Now(), fleet, arts, clusters, plan, previous)
	c.rolloutDue, c.rolloutKeep = out.Due, out.Keep
	if out.Retry {
		c.retryAt = c.clock.Now().Add(retryAfterFailure)
	}
}

// rolloutsDue reports whether a rollout's bake, deadline or window is due.
func (c *Controller) rolloutsDue() bool {
	return !c.rolloutDue.IsZero() && !c.clock.Now().Before(c.rolloutDue)
}
