package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckPath(t *testing.T) {
	const want = ": a path template can use .Cluster.Name and .Cluster.Labels.<key>"
	tests := []struct {
		path string
		want []string
	}{
		{"", nil},
		{"clusters/{{ .Cluster.Name }}", nil},
		{"clusters/{{ .Cluster.Labels.region }}/{{ index .Cluster.Labels \"topology.kubernetes.io/zone\" }}", nil},
		{"{{ if .Cluster.Labels.region }}{{ .Cluster.Labels.region }}{{ else }}default{{ end }}", nil},
		// Inside with and range the dot is something else: not judged.
		{"{{ with .Cluster.Labels }}{{ .region }}{{ end }}", nil},
		{"{{ range $k, $v := .Cluster.Labels }}{{ $k }}{{ end }}", nil},
		{"{{ with .Cluster.Labels.x }}{{ $.Cluster.Nam }}{{ else }}{{ .Region }}{{ end }}", []string{
			".Cluster.Nam does not exist" + want,
			".Region does not exist" + want,
		}},
		{"{{ .Cluster.Label.region }}", []string{".Cluster.Label.region does not exist" + want}},
		{"{{ .Cluster.Name.x }}", []string{".Cluster.Name.x does not exist" + want}},
		{"{{ printf \"%s-%s\" .Cluster.Name .Name }}", []string{".Name does not exist" + want}},
		{"/abs", []string{`path "/abs" must be relative to the root of the source`}},
		{"a/..", []string{`path "a/.." must not contain ".."`}},
		{"a/..b/c..", nil},
		{"{{ nosuchfunc }}", []string{`template: path:1: function "nosuchfunc" not defined`}},
	}
	for _, tt := range tests {
		got := checkPath(tt.path)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("checkPath(%q) mismatch (-want +got):\n%s", tt.path, diff)
		}
	}
}

func TestPathTemplateMissingLabel(t *testing.T) {
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
