package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// TestPathFastPath checks that executing a simple template directly gives what text/template
// gives, error included, and that anything else goes to text/template.
func TestPathFastPath(t *testing.T) {
	clusters := []Cluster{
		cluster("eu-1", "region", "eu", "env", "production"),
		cluster("bare"),
	}
	tests := []struct {
		path   string
		simple bool
	}{
		{"clusters/{{ .Cluster.Labels.region }}/baseline", true},
		{"{{ .Cluster.Name }}", true},
		{"{{.Cluster.Labels.env}}-{{.Cluster.Labels.region}}/{{.Cluster.Name}}", true},
		{"{{/* a comment */}}x", true}, // comments are not kept by the parser
		{`{{ index .Cluster.Labels "region" }}`, false},
		{"{{ .Cluster.Labels.region | printf \"%s\" }}", false},
		{"{{ if .Cluster.Labels.region }}r{{ end }}", false},
		{"{{ $n := .Cluster.Name }}{{ $n }}", false},
		{"{{ .Cluster.Labels }}", false},
	}
	for _, tt := range tests {
		tmpl, err := v1alpha1.ReleaseSpec{Path: tt.path}.PathTemplate()
		if err != nil {
			t.Fatal(err)
		}
		pt := newPathTemplate(tmpl)
		if got := pt.parts != nil; got != tt.simple {
			t.Errorf("%q: simple = %v, want %v", tt.path, got, tt.simple)
		}
		for _, c := range clusters {
			type result struct{ Path, Err string }
			run := func(f func(Cluster) (string, error)) result {
				p, err := f(c)
				if err != nil {
					return result{p, err.Error()}
				}
				return result{p, ""}
			}
			want, got := run(pt.executeTemplate), run(pt.execute)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q for %s: fast path differs from text/template (-want +got):\n%s", tt.path, c.Name, diff)
			}
		}
	}
}
