package agent

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/render"
)

// lazySandbox is the agent's render.Sandbox, made on first use: every release renders in a
// child process of this binary, bounded by its budget, so a chart or kustomization that
// would exhaust memory or spin fails its own release and never the agent. Its slots are
// shared round-robin between projects (render.Options.Project).
type lazySandbox struct {
	once sync.Once
	s    *render.Sandbox
	err  error
}

func (l *lazySandbox) Render(ctx context.Context, opts render.Options) ([]*unstructured.Unstructured, error) {
	l.once.Do(func() { l.s, l.err = render.NewSandbox(render.SandboxOptions{}) })
	if l.err != nil {
		return nil, l.err
	}
	return l.s.Render(ctx, opts)
}
