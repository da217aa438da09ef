package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/render"
)

// renderBudgetFlags are the hub's --render-* flags: the platform's default render budget,
// which a Project may lower and a Release may not exceed (docs/rendering.md).
type renderBudgetFlags struct {
	memory, output string
	cpu, timeout   time.Duration
	objects        int
}

func addRenderBudgetFlags(f *pflag.FlagSet) *renderBudgetFlags {
	var b renderBudgetFlags
	def := render.DefaultBudget
	f.StringVar(&b.memory, "render-memory", v1alpha1.Quantity(def.MemoryBytes), "memory one render may use, a Kubernetes quantity (e.g. 128Mi); a render over it is stopped and its release fails")
	f.DurationVar(&b.cpu, "render-cpu", def.CPUTime, "CPU time one render may use")
	f.DurationVar(&b.timeout, "render-timeout", def.WallTime, "wall-clock time one render may take")
	f.IntVar(&b.objects, "render-max-objects", def.Objects, "objects one render may produce")
	f.StringVar(&b.output, "render-max-output", v1alpha1.Quantity(def.OutputBytes), "bytes of rendered objects (as JSON) one render may produce, a Kubernetes quantity")
	return &b
}

// limits checks the flags and returns the budget they set.
func (b *renderBudgetFlags) limits() (v1alpha1.BudgetLimits, error) {
	size := func(flag, v string) (int64, error) {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Value() <= 0 {
			return 0, fmt.Errorf("--%s %q: want a positive quantity such as \"256Mi\"", flag, v)
		}
		return q.Value(), nil
	}
	var out v1alpha1.BudgetLimits
	var err error
	if out.MemoryBytes, err = size("render-memory", b.memory); err != nil {
		return out, err
	}
	if out.MemoryBytes < v1alpha1.MinRenderMemory {
		return out, fmt.Errorf("--render-memory %s: below the least a render can run in (%s)", b.memory, v1alpha1.Quantity(v1alpha1.MinRenderMemory))
	}
	if out.OutputBytes, err = size("render-max-output", b.output); err != nil {
		return out, err
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"render-cpu", b.cpu}, {"render-timeout", b.timeout}} {
		if d.v <= 0 {
			return out, fmt.Errorf("--%s %s: want a positive duration such as \"30s\"", d.flag, d.v)
		}
	}
	if b.objects <= 0 {
		return out, fmt.Errorf("--render-max-objects %d: want a positive number", b.objects)
	}
	out.CPUTime, out.WallTime, out.Objects = b.cpu, b.timeout, b.objects
	return out, nil
}
