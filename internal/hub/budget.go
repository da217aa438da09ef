package hub

import (
	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/render"
)

// scheduleOptions are the platform's settings every schedule applies, the controller's and a
// plan's alike: the render budget of the hub's flags, and the budget agents render under when
// an assignment names none, which an assignment then does not carry.
func (h *Hub) scheduleOptions() schedule.Options {
	d := render.DefaultBudget
	return schedule.Options{
		RenderBudget: h.opts.RenderBudget,
		AgentDefaults: v1alpha1.BudgetLimits{MemoryBytes: d.MemoryBytes, CPUTime: d.CPUTime, WallTime: d.WallTime,
			Objects: d.Objects, OutputBytes: d.OutputBytes},
	}
}
