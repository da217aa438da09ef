package v1alpha1

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// RenderBudget bounds the renders of a release: what they may use (memory, CPU time,
// wall-clock time) and produce (objects, bytes of output). Sizes are Kubernetes quantities
// ("256Mi"), times durations ("30s"). An unset field takes the bound above it: a release's
// its project's maximum, a project's the hub's default.
type RenderBudget struct {
	Memory  *resource.Quantity `json:"memory,omitempty"`
	CPU     Duration           `json:"cpu,omitzero"`
	Timeout Duration           `json:"timeout,omitzero"`
	Objects int                `json:"objects,omitempty"`
	Output  *resource.Quantity `json:"output,omitempty"`
}

// BudgetLimits is a render budget in plain numbers: the hub's defaults, a project's maximum,
// or what an assignment runs under. It mirrors render.Budget, which this package cannot
// import.
type BudgetLimits struct {
	MemoryBytes int64
	CPUTime     time.Duration
	WallTime    time.Duration
	Objects     int
	OutputBytes int64
}

var quantityType = reflect.TypeFor[resource.Quantity]()

func checkQuantity(path string, v any) []fieldProblem {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return []fieldProblem{{path, fmt.Sprintf("must be a quantity such as \"256Mi\", not %s", jsonKind(v))}}
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return []fieldProblem{{path, fmt.Sprintf("%q is not a quantity: want a size such as \"256Mi\" or \"1Gi\"", s)}}
	}
	return nil
}

// MinRenderMemory is the least memory budget that can render anything at all: a render's
// process needs some MiB before it reads its first file.
const MinRenderMemory = 16 << 20

// validateRenderBudget checks a budget on its own (field is "spec.renderBudget"): no
// negative or absurd value. What it may be against its project and the hub is checked when
// the release is scheduled ([ResolveRenderBudget]).
func validateRenderBudget(field string, b *RenderBudget, add func(field, msg string)) {
	if b == nil {
		return
	}
	if b.Memory != nil {
		if n := b.Memory.Value(); n < MinRenderMemory {
			add(field+".memory", fmt.Sprintf("%s is below the least a render can run in (16Mi)", b.Memory.String()))
		}
	}
	if b.Output != nil && b.Output.Value() <= 0 {
		add(field+".output", fmt.Sprintf("%s must be positive", b.Output.String()))
	}
	if b.CPU.Duration < 0 {
		add(field+".cpu", fmt.Sprintf("%s must be positive", b.CPU.Duration))
	}
	if b.Timeout.Duration < 0 {
		add(field+".timeout", fmt.Sprintf("%s must be positive", b.Timeout.Duration))
	}
	if b.Objects < 0 {
		add(field+".objects", fmt.Sprintf("%d must be positive", b.Objects))
	}
}

// limits is b over def: each field b sets, else def's.
func (b *RenderBudget) limits(def BudgetLimits) BudgetLimits {
	if b == nil {
		return def
	}
	if b.Memory != nil {
		def.MemoryBytes = b.Memory.Value()
	}
	if b.CPU.Duration > 0 {
		def.CPUTime = b.CPU.Duration
	}
	if b.Timeout.Duration > 0 {
		def.WallTime = b.Timeout.Duration
	}
	if b.Objects > 0 {
		def.Objects = b.Objects
	}
	if b.Output != nil {
		def.OutputBytes = b.Output.Value()
	}
	return def
}

// ProjectRenderBudget is a project's maximum: its renderBudget over the hub's defaults, each
// field held at the hub's (a project may lower the platform's bounds, never raise them). A
// zero field of hub sets no bound there.
func ProjectRenderBudget(hub BudgetLimits, project *RenderBudget) BudgetLimits {
	p := project.limits(hub)
	p.MemoryBytes = atMost(p.MemoryBytes, hub.MemoryBytes)
	p.CPUTime = atMost(p.CPUTime, hub.CPUTime)
	p.WallTime = atMost(p.WallTime, hub.WallTime)
	p.Objects = atMost(p.Objects, hub.Objects)
	p.OutputBytes = atMost(p.OutputBytes, hub.OutputBytes)
	return p
}

// atMost is v held at bound, where a zero bound is none.
func atMost[T int | int64 | time.Duration](v, bound T) T {
	if bound > 0 {
		return min(v, bound)
	}
	return v
}

// above says whether v is over a bound (a zero bound is none).
func above[T int | int64 | time.Duration](v, bound T) bool { return bound > 0 && v > bound }

// ResolveRenderBudget is the budget a release of project runs under: what the release asks
// (its renderBudget), each unset field the project's maximum. A field asking more than the
// project's maximum is an error naming the field, the value and the maximum: the release is
// not scheduled.
func ResolveRenderBudget(hub BudgetLimits, projectName string, project, release *RenderBudget) (BudgetLimits, error) {
	max := ProjectRenderBudget(hub, project)
	if release == nil {
		return max, nil
	}
	b := release.limits(max)
	over := func(field, value, maximum string) error {
		return fmt.Errorf("spec.renderBudget.%s: %s is above project %s's maximum of %s", field, value, projectName, maximum)
	}
	switch {
	case above(b.MemoryBytes, max.MemoryBytes):
		return max, over("memory", release.Memory.String(), Quantity(max.MemoryBytes))
	case above(b.CPUTime, max.CPUTime):
		return max, over("cpu", b.CPUTime.String(), max.CPUTime.String())
	case above(b.WallTime, max.WallTime):
		return max, over("timeout", b.WallTime.String(), max.WallTime.String())
	case above(b.Objects, max.Objects):
		return max, over("objects", strconv.Itoa(b.Objects), strconv.Itoa(max.Objects))
	case above(b.OutputBytes, max.OutputBytes):
		return max, over("output", release.Output.String(), Quantity(max.OutputBytes))
	}
	return b, nil
}

// Quantity writes n bytes as a binary quantity ("256Mi").
func Quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }
