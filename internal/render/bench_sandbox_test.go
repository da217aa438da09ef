package render_test

import (
	"context"
	"testing"

	"github.com/flotilla/flotilla/internal/render"
)

// BenchmarkSandbox compares a render in a child process with the same render in process, for
// a small chart and a small kustomization, in the same run: the child's cost is a process
// start and the pipe.
func BenchmarkSandbox(b *testing.B) {
	chart := sandboxTree(b, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: small\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {k: v}\n",
	})
	kust := sandboxTree(b, map[string]string{
		"kustomization.yaml": "namePrefix: p-\nresources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n",
	})
	s, err := render.NewSandbox(render.SandboxOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, root string }{{"chart", chart}, {"kustomize", kust}} {
		for _, mode := range []struct {
			name   string
			render func(context.Context, render.Options) error
		}{
			{"in-process", func(ctx context.Context, o render.Options) error { _, err := render.Render(ctx, o); return err }},
			{"child", func(ctx context.Context, o render.Options) error { _, err := s.Render(ctx, o); return err }},
		} {
			b.Run(tc.name+"/"+mode.name, func(b *testing.B) {
				for b.Loop() {
					if err := mode.render(b.Context(), render.Options{Root: tc.root}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
