package controller

import (
	"context"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// applyRollouts moves every release that has a rollout one step (internal/hub/rollout) and
// sets, per cluster, the digest its rollout assigns there instead of the newest.
func (c *Controller) applyRollouts(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]schedule.Document) {
}
