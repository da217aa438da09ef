package controller

import (
	"context"

	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// applySyncs puts each cluster's pending sync requests into its document.
func (c *Controller) applySyncs(ctx context.Context, clusters []schedule.Cluster, plan *schedule.Plan) {
}

// PollNow polls at once the sources whose URL and branch match (a webhook's push), and
// returns their names.
func (c *Controller) PollNow(url, branch string) []string { return nil }
