package agent

import (
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/render"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// projectName is the project an assignment's release belongs to: the platform's when the
// hub sends no project rules.
func projectName(as *agentv1.Assignment) string {
	return v1alpha1.ProjectOrPlatform(as.GetProject().GetName())
}

// renderBudget is the budget an assignment's renders run under: the hub's, each field it
// leaves unset (or a hub that sends none) the agent's default.
func renderBudget(pb *agentv1.RenderBudget) render.Budget {
	b := render.Budget{
		MemoryBytes: pb.GetMemoryBytes(),
		CPUTime:     time.Duration(pb.GetCpuMillis()) * time.Millisecond,
		WallTime:    time.Duration(pb.GetWallMillis()) * time.Millisecond,
		Objects:     int(pb.GetObjects()),
		OutputBytes: pb.GetOutputBytes(),
	}
	return b.WithDefaults(render.DefaultBudget)
}
