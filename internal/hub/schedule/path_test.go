package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// TestPathFastPath checks that executing a simple template directly gives what text/template
// gives, error included, and that anything else goes to text/template.
func TestPathFastPath(t *testing.T) {
	t.Parallel()
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
		{`x/{{ index .Cluster.Labels "region" }}/{{ .Cluster.Name }}`, false},
		{`{{ index .Cluster.Labels "nosuch" }}`, false},
		// Both stop at v1alpha1.MaxPathLength, with the same error.
		{"{{ .Cluster.Labels.long }}{{ .Cluster.Labels.long }}{{ .Cluster.Name }}", true},
		{`{{ index .Cluster.Labels "long" }}{{ index .Cluster.Labels "long" }}`, false},
	}
	long := strings.Repeat("l", 600)
	clusters = append(clusters, cluster("long", "long", long), cluster("exact", "long", strings.Repeat("e", 512)))
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

// TestPathBounded checks the scheduler's side of bounded path templates: a template that could
// build a string of any size is refused for every cluster (validation refuses it too, but a
// fleet built in code reaches Schedule without validation), and a path that resolves to more
// than v1alpha1.MaxPathLength bytes is a problem for that cluster, not an assignment.
func TestPathBounded(t *testing.T) {
	t.Parallel()
	bomb := withPath(release("bomb"), "{{range 1000000000}}aaaa{{end}}")
	printf := withPath(release("printf"), `{{ printf "%0999999999d" 0 }}`)
	long := withPath(release("long"), "{{ .Cluster.Labels.a }}{{ .Cluster.Labels.a }}")
	literal := withPath(release("literal"), strings.Repeat("p", v1alpha1.MaxPathLength+1))
	c := cluster("eu-1", "a", strings.Repeat("x", 600))
	p := Schedule(fleet(bomb, printf, long, literal), []Cluster{c}, artifacts, nil, "r1")
	if got := p.Assignments["eu-1"]; len(got) != 0 {
		t.Errorf("assignments = %v, want none", got)
	}
	const use = ` is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"; not assigned`
	var got []string
	for _, pr := range p.Problems {
		got = append(got, pr.String())
	}
	want := []string{
		"Release/bomb on cluster eu-1: range at path:1:8" + use,
		"Release/literal on cluster eu-1: resolved path is longer than 1024 bytes; not assigned",
		"Release/long on cluster eu-1: resolved path is longer than 1024 bytes; not assigned",
		`Release/printf on cluster eu-1: printf "%0999999999d" 0 at path:1:3` + use,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}

	tmpl, err := v1alpha1.ReleaseSpec{Path: long.Spec.Path}.PathTemplate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newPathTemplate(tmpl).execute(c); !errors.Is(err, v1alpha1.ErrPathTooLong) {
		t.Errorf("execute = %v, want ErrPathTooLong", err)
	}
}
