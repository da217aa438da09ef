package agent

import (
	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/render"
)

// projectName is the project an assignment's release belongs to: the platform's when the
// hub sends no project rules.
func projectName(as *desired.Assignment) string {
	return v1alpha1.ProjectOrPlatform(projectOf(as))
}

// projectOf is the project the hub names for an assignment, "" when it sends no rules.
func projectOf(as *desired.Assignment) string {
	if as.Project == nil {
		return ""
	}
	return as.Project.Name
}

// renderBudget is the budget an assignment's renders run under: the hub's, each field it
// leaves unset (or a hub that sends none) the agent's default.
func renderBudget(l *v1alpha1.BudgetLimits) render.Budget {
	var b render.Budget
	if l != nil {
		b = render.Budget{MemoryBytes: l.MemoryBytes, CPUTime: l.CPUTime, WallTime: l.WallTime, Objects: l.Objects, OutputBytes: l.OutputBytes}
	}
	return b.WithDefaults(render.DefaultBudget)
}
