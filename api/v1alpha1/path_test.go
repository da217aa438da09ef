package v1alpha1

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckPath(t *testing.T) {
	t.Parallel()
	const want = ": a path template can use .Cluster.Name and .Cluster.Labels.<key>"
	const use = ` is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`
	tests := []struct {
		path string
		want []string
	}{
		{"", nil},
		{"clusters/{{ .Cluster.Name }}", nil},
		{"clusters/{{ .Cluster.Labels.region }}/{{ index .Cluster.Labels \"topology.kubernetes.io/zone\" }}", nil},
		{"{{- .Cluster.Name -}}/{{/* a comment */}}x", nil},
		{"{{ .Cluster.Label.region }}", []string{".Cluster.Label.region does not exist" + want}},
		{"{{ .Cluster.Name.x }}", []string{".Cluster.Name.x does not exist" + want}},
		{"{{ .Region }}", []string{".Region does not exist" + want}},
		{"/abs", []string{`path "/abs" must be relative to the root of the source`}},
		{"a/..", []string{`path "a/.." must not contain ".."`}},
		{"a/..b/c..", nil},
		{"{{ nosuchfunc }}", []string{`template: path:1: function "nosuchfunc" not defined`}},
		{strings.Repeat("a", MaxPathLength+1), []string{"path is 1025 bytes long: it must be at most 1024"}},

		// Everything but literal text and the three references is refused: each of these
		// could make the hub build a string of any size, or hides what the path is.
		{"{{range 1000000000}}aaaa{{end}}", []string{"range at path:1:8" + use}},
		{"x/{{ if .Cluster.Labels.region }}r{{ else }}d{{ end }}", []string{"if at path:1:8" + use}},
		{"{{ with .Cluster.Labels }}{{ .region }}{{ end }}", []string{"with at path:1:8" + use}},
		{"{{ range $k, $v := .Cluster.Labels }}{{ $k }}{{ end }}", []string{"range at path:1:9" + use}},
		{`{{ define "x" }}a{{ end }}{{ template "x" }}`, []string{"define and block are not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels \"<key>\"", "template at path:1:38" + use}},
		{`{{ block "x" . }}a{{ end }}`, []string{"define and block are not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels \"<key>\"", "template at path:1:9" + use}},
		{`{{ printf "%0999999999d" 0 }}`, []string{`printf "%0999999999d" 0 at path:1:3` + use}},
		{`{{ .Cluster.Name | printf "%s" }}`, []string{`.Cluster.Name | printf "%s" at path:1:3` + use}},
		{"{{ printf \"%s-%s\" .Cluster.Name .Name }}", []string{".Name does not exist" + want, `printf "%s-%s" .Cluster.Name .Name at path:1:3` + use}},
		{"{{ $n := .Cluster.Name }}{{ $n }}", []string{"$n := .Cluster.Name at path:1:3" + use, "$n at path:1:28" + use}},
		{"{{ .Cluster.Labels }}", []string{".Cluster.Labels at path:1:3" + use}},
		{"{{ index .Cluster.Labels .Cluster.Name }}", []string{"index .Cluster.Labels .Cluster.Name at path:1:3" + use}},
		{`{{ "literal" }}`, []string{`"literal" at path:1:3` + use}},
	}
	for _, tt := range tests {
		got := checkPath(tt.path)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("checkPath(%q) mismatch (-want +got):\n%s", tt.path, diff)
		}
		if _, err := (ReleaseSpec{Path: tt.path}).PathTemplate(); (err != nil) != (len(got) > 0 && !strings.HasPrefix(tt.path, "/") && !strings.Contains(tt.path, "..") && len(tt.path) <= MaxPathLength) {
			t.Errorf("PathTemplate(%q) error = %v, but checkPath says %q", tt.path, err, got)
		}
	}
}

// TestExecutePathBounded checks that a resolved path longer than MaxPathLength is an error,
// whatever the cluster's labels hold.
func TestExecutePathBounded(t *testing.T) {
	t.Parallel()
	tmpl, err := ReleaseSpec{Path: "clusters/{{ .Cluster.Labels.a }}{{ .Cluster.Labels.a }}"}.PathTemplate()
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 600)
	got, err := ExecutePath(tmpl, PathData{Cluster: PathCluster{Name: "c", Labels: map[string]string{"a": big}}})
	if !errors.Is(err, ErrPathTooLong) || got != "" {
		t.Errorf("ExecutePath with a 1209-byte result = %q, %v; want ErrPathTooLong", got, err)
	}
	got, err = ExecutePath(tmpl, PathData{Cluster: PathCluster{Name: "c", Labels: map[string]string{"a": "eu"}}})
	if err != nil || got != "clusters/eueu" {
		t.Errorf("ExecutePath = %q, %v; want clusters/eueu", got, err)
	}
}

func TestPathTemplateMissingLabel(t *testing.T) {
	t.Parallel()
	tmpl, err := ReleaseSpec{Path: "clusters/{{ .Cluster.Labels.region }}"}.PathTemplate()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	err = tmpl.Execute(&b, PathData{Cluster: PathCluster{Name: "a"}})
	if err == nil || !strings.Contains(err.Error(), `no entry for key "region"`) {
		t.Errorf("Execute without the label: want a missing key error, got %v (%q)", err, b.String())
	}
}

func TestSplitDocuments(t *testing.T) {
	t.Parallel()
	in := "# header\n---\na: 1\n--- # second\nb: 2\n---\n# empty\n---   \nc: |\n  ---- not a marker\n...\n"
	type doc struct {
		Index int
		Data  string
	}
	var got []doc
	for _, d := range splitDocuments([]byte(in)) {
		got = append(got, doc{d.index, string(d.data)})
	}
	want := []doc{
		{1, "\n\na: 1\n"},
		{2, "\n\n\n # second\nb: 2\n"},
		{3, strings.Repeat("\n", 7) + "   \nc: |\n  ---- not a marker\n...\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("splitDocuments mismatch (-want +got):\n%s", diff)
	}
}
