package plan

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/render"
)

// lazySandbox is a plan's render.Sandbox, made on first use: the hub renders what a plan
// compares in child processes bounded by each release's budget, as the agent does, so that a
// bomb fails its own release's plan and never the hub. A plan renders one release at a time,
// so one slot is enough.
type lazySandbox struct {
	once sync.Once
	s    *render.Sandbox
	err  error
}

func (l *lazySandbox) Render(ctx context.Context, opts render.Options) ([]*unstructured.Unstructured, error) {
	l.once.Do(func() { l.s, l.err = render.NewSandbox(render.SandboxOptions{Concurrent: 1}) })
	if l.err != nil {
		return nil, l.err
	}
	return l.s.Render(ctx, opts)
}
