package v1alpha1

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// platformSource is a valid Source that the cases below can refer to.
const platformSource = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: https://git.example.com/platform.git}
`

// release returns a Release document named name with spec lines appended (indented by the
// caller).
func release(name, spec string) string {
	return "apiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: " + name + "}\nspec:\n" + spec
}

const validSpec = "  source: platform\n  targets: [{selector: {}}]\n"

func TestParseInvalid(t *testing.T) {
	const f = "fleet/releases.yaml"
	const s = "fleet/sources.yaml"
	tests := []struct {
		name  string
		files map[string]string // f and s unless given; s holds platformSource by default
		want  []Problem
	}{
		{
			name:  "undefined source",
			files: map[string]string{f: release("baseline", "  source: platfrom\n  targets: [{selector: {}}]\n")},
			want:  []Problem{{f, "Release/baseline", "spec.source", `source "platfrom" is not defined`}},
		},
		{
			name:  "unknown nested field names its path",
			files: map[string]string{f: release("baseline", "  source: platform\n  targets: [{selecter: {}}]\n")},
			want:  []Problem{{f, "Release/baseline", "spec.targets[0].selecter", `unknown field "selecter", did you mean "selector"?`}},
		},
		{
			name:  "field names are case-sensitive",
			files: map[string]string{f: release("baseline", "  Source: platform\n  targets: [{selector: {}}]\n")},
			want:  []Problem{{f, "Release/baseline", "spec.Source", `unknown field "Source", did you mean "source"?`}},
		},
		{
			name:  "unknown field without a close match lists the known ones",
			files: map[string]string{s: platformSource + "  color: blue\n"},
			want:  []Problem{{s, "Source/platform", "spec.color", `unknown field "color" (known fields: git, interval)`}},
		},
		{
			name:  "other kind",
			files: map[string]string{f: "apiVersion: flotilla.dev/v1alpha1\nkind: Kustomization\nmetadata: {name: x}\n"},
			want:  []Problem{{f, "document 1", "kind", `kind "Kustomization" is not a fleet object kind: want Source, Release or Notification`}},
		},
		{
			name:  "other apiVersion of a fleet kind",
			files: map[string]string{f: "apiVersion: flotilla.dev/v1\nkind: Release\nmetadata: {name: x}\n"},
			want:  []Problem{{f, "Release/x", "apiVersion", `apiVersion "flotilla.dev/v1" is not supported: want flotilla.dev/v1alpha1`}},
		},
		{
			name:  "Kubernetes object in the second document",
			files: map[string]string{f: release("a", validSpec) + "---\napiVersion: v1\nkind: ConfigMap\n"},
			want:  []Problem{{f, "document 2", "", `apiVersion "v1", kind "ConfigMap" is not a fleet object: want apiVersion flotilla.dev/v1alpha1 with kind Source, Release or Notification`}},
		},
		{
			name:  "no apiVersion or kind",
			files: map[string]string{f: "metadata: {name: x}\n"},
			want:  []Problem{{f, "document 1", "", "apiVersion not set, kind not set is not a fleet object: want apiVersion flotilla.dev/v1alpha1 with kind Source, Release or Notification"}},
		},
		{
			name:  "not an object",
			files: map[string]string{f: "- a\n- b\n"},
			want:  []Problem{{f, "document 1", "", "must be an object with apiVersion and kind, not a list"}},
		},
		{
			name:  "syntax error gives the line in the file",
			files: map[string]string{f: release("a", validSpec) + "---\nkind: Release\nspec: [unclosed\n"},
			want:  []Problem{{f, "document 2", "", "yaml: line 9: did not find expected ',' or ']'"}},
		},
		{
			name:  "duplicate key",
			files: map[string]string{f: release("a", validSpec+"  source: again\n")},
			want:  []Problem{{f, "document 1", "", `yaml: unmarshal errors: line 7: key "source" already set in map`}},
		},
		{
			name:  "unquoted number for a string",
			files: map[string]string{f: release("a", "  source: platform\n  targets: [{selector: {matchLabels: {tier: 1}}}]\n")},
			want:  []Problem{{f, "Release/a", "spec.targets[0].selector.matchLabels[tier]", "must be a string, not the number 1 (quote the value)"}},
		},
		{
			name:  "string for a boolean",
			files: map[string]string{f: release("a", validSpec+"  prune: \"true\"\n")},
			want:  []Problem{{f, "Release/a", "spec.prune", "must be true or false, not a string"}},
		},
		{
			name:  "number for a duration",
			files: map[string]string{f: release("a", validSpec+"  interval: 60\n")},
			want:  []Problem{{f, "Release/a", "spec.interval", `must be a duration such as "90s", "1m" or "1h30m", not the number 60`}},
		},
		{
			name:  "bad duration",
			files: map[string]string{f: release("a", validSpec+"  timeout: 1 minute\n")},
			want:  []Problem{{f, "Release/a", "spec.timeout", `"1 minute" is not a duration: want Go duration syntax such as "90s", "1m" or "1h30m"`}},
		},
		{
			name:  "source without git",
			files: map[string]string{s: "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: platform}\nspec: {interval: 1m}\n"},
			want:  []Problem{{s, "Source/platform", "spec.git", "must be set: a source needs a Git repository"}},
		},
		{
			name: "source git without url, two refs, bad semver",
			files: map[string]string{s: "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: platform}\n" +
				"spec: {git: {tag: v1, semver: 'not a range', commit: abc}}\n"},
			want: []Problem{
				{s, "Source/platform", "spec.git.url", "must be set"},
				{s, "Source/platform", "spec.git", "set at most one of branch, tag, semver and commit, not tag and semver and commit"},
				{s, "Source/platform", "spec.git.semver", `"not a range" is not a semver range: improper constraint: "not a range"`},
			},
		},
		{
			name:  "source interval below the minimum",
			files: map[string]string{s: platformSource + "  interval: 1500ms\n"},
			want:  []Problem{{s, "Source/platform", "spec.interval", "must be at least 2s, not 1.5s"}},
		},
		{
			name:  "invalid names",
			files: map[string]string{f: release("Baseline_1", validSpec+"  namespace: Kube.System\n")},
			want: []Problem{
				{f, "Release/Baseline_1", "metadata.name", `"Baseline_1" is not a valid name: ` + strings.Join(content.IsDNS1123Label("Baseline_1"), "; ")},
				{f, "Release/Baseline_1", "spec.namespace", `"Kube.System" is not a valid namespace name: ` + strings.Join(content.IsDNS1123Label("Kube.System"), "; ")},
			},
		},
		{
			name:  "missing name",
			files: map[string]string{f: release(`""`, validSpec)},
			want:  []Problem{{f, "Release in document 1", "metadata.name", "must be set"}},
		},
		{
			name:  "invalid selector label key and value",
			files: map[string]string{f: release("a", "  source: platform\n  targets: [{selector: {}}, {selector: {matchLabels: {'-bad': 'a b'}}}]\n")},
			want: []Problem{
				{f, "Release/a", "spec.targets[1].selector.matchLabels[-bad]", `label key "-bad" is invalid: ` + strings.Join(content.IsLabelKey("-bad"), "; ")},
				{f, "Release/a", "spec.targets[1].selector.matchLabels[-bad]", `label value "a b" is invalid: ` + strings.Join(content.IsLabelValue("a b"), "; ")},
			},
		},
		{
			name:  "no targets",
			files: map[string]string{f: release("a", "  source: platform\n")},
			want:  []Problem{{f, "Release/a", "spec.targets", "must list at least one target (a target with an empty selector matches every cluster)"}},
		},
		{
			name:  "path leaving the source",
			files: map[string]string{f: release("a", validSpec+"  path: clusters/../../etc\n")},
			want:  []Problem{{f, "Release/a", "spec.path", `path "clusters/../../etc" must not contain ".."`}},
		},
		{
			name:  "path template that does not parse",
			files: map[string]string{f: release("a", validSpec+"  path: 'clusters/{{ .Cluster.Name'\n")},
			want:  []Problem{{f, "Release/a", "spec.path", "template: path:1: unclosed action"}},
		},
		{
			name:  "path template naming a field that does not exist",
			files: map[string]string{f: release("a", validSpec+"  path: 'clusters/{{ .Region }}'\n")},
			want:  []Problem{{f, "Release/a", "spec.path", ".Region does not exist: a path template can use .Cluster.Name and .Cluster.Labels.<key>"}},
		},
		{
			name:  "path template that would build a string of any size",
			files: map[string]string{f: release("a", validSpec+"  path: '{{range 1000000000}}aaaa{{end}}'\n")},
			want: []Problem{{f, "Release/a", "spec.path",
				`range at path:1:8 is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`}},
		},
		{
			name:  "path template calling a function other than index",
			files: map[string]string{f: release("a", validSpec+"  path: '{{ printf \"%0999999999d\" 0 }}'\n")},
			want: []Problem{{f, "Release/a", "spec.path",
				`printf "%0999999999d" 0 at path:1:3 is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`}},
		},
		{
			name:  "negative interval",
			files: map[string]string{f: release("a", validSpec+"  interval: -10m\n")},
			want:  []Problem{{f, "Release/a", "spec.interval", "must be positive, not -10m0s"}},
		},
		{
			name: "duplicate across files names the first file",
			files: map[string]string{
				"fleet/a.yaml": release("baseline", validSpec),
				"fleet/b.yaml": release("baseline", validSpec),
			},
			want: []Problem{{"fleet/b.yaml", "Release/baseline", "metadata.name", `Release "baseline" is already defined in fleet/a.yaml`}},
		},
		{
			name:  "a Source and a Release may share a name",
			files: map[string]string{f: release("platform", validSpec)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string][]byte{s: []byte(platformSource)}
			for name, data := range tt.files {
				files[name] = []byte(data)
			}
			fleet, err := Parse(files)
			var got []Problem
			if err != nil {
				var invalid *InvalidError
				if !errors.As(err, &invalid) {
					t.Fatalf("Parse: want *InvalidError, got %T: %v", err, err)
				}
				got = invalid.Problems
				if fleet != nil {
					t.Errorf("Parse returned a fleet with an error")
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidErrorMessage(t *testing.T) {
	_, err := Parse(map[string][]byte{
		"fleet/releases.yaml": []byte(release("baseline", "  source: platform\n  targets: [{selector: {}}]\n") +
			"---\n" + release("apps", "  source: platform\n")),
	})
	want := `fleet/releases.yaml: Release/baseline: spec.source: source "platform" is not defined
fleet/releases.yaml: Release/apps: spec.targets: must list at least one target (a target with an empty selector matches every cluster)
fleet/releases.yaml: Release/apps: spec.source: source "platform" is not defined`
	if err == nil {
		t.Fatal("Parse: want an error")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEmpty(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
	}{
		{"no files", nil},
		{"empty file", map[string][]byte{"a.yaml": nil}},
		{"comments and markers only", map[string][]byte{"a.yaml": []byte("# nothing\n---\n---\n# still nothing\n...\n")}},
		{"null document", map[string][]byte{"a.yaml": []byte("~\n")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&Fleet{}, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	f := &Fleet{
		Sources:  []Source{{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://x"}}}},
		Releases: []Release{{Spec: ReleaseSpec{Source: "platform", Targets: []Target{{}}}}},
	}
	var invalid *InvalidError
	if err := f.Validate(); !errors.As(err, &invalid) {
		t.Fatalf("Validate: want *InvalidError, got %v", err)
	}
	want := []Problem{{Object: "releases[0]", Field: "metadata.name", Message: "must be set"}}
	if diff := cmp.Diff(want, invalid.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}

	f.Releases[0].Metadata.Name = "baseline"
	if err := f.Validate(); err != nil {
		t.Errorf("Validate of a valid fleet: %v", err)
	}
}
