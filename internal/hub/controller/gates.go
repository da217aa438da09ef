package controller

import (
	"context"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// applyGates puts into each cluster's document the gates that apply to it: the fleet's
// Windows whose clusterSelector matches it, freezes, its suspension, and suspended releases.
func (c *Controller) applyGates(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan) {
}
