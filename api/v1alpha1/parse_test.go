package v1alpha1

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
	t.Parallel()
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
			want:  []Problem{{f, "Release/baseline", "spec.source", `source "platfrom" is not defined`, 0}},
		},
		{
			name:  "unknown nested field names its path",
			files: map[string]string{f: release("baseline", "  source: platform\n  targets: [{selecter: {}}]\n")},
			want:  []Problem{{f, "Release/baseline", "spec.targets[0].selecter", `unknown field "selecter", did you mean "selector"?`, 0}},
		},
		{
			name:  "field names are case-sensitive",
			files: map[string]string{f: release("baseline", "  Source: platform\n  targets: [{selector: {}}]\n")},
			want:  []Problem{{f, "Release/baseline", "spec.Source", `unknown field "Source", did you mean "source"?`, 0}},
		},
		{
			name:  "unknown field without a close match lists the known ones",
			files: map[string]string{s: platformSource + "  color: blue\n"},
			want:  []Problem{{s, "Source/platform", "spec.color", `unknown field "color" (known fields: git, helm, interval, oci)`, 0}},
		},
		{
			name:  "other kind",
			files: map[string]string{f: "apiVersion: flotilla.dev/v1alpha1\nkind: Kustomization\nmetadata: {name: x}\n"},
			want:  []Problem{{f, "document 1", "kind", `kind "Kustomization" is not a fleet object kind: want Source, Release, Notification, Project or Window`, 0}},
		},
		{
			name:  "other apiVersion of a fleet kind",
			files: map[string]string{f: "apiVersion: flotilla.dev/v1\nkind: Release\nmetadata: {name: x}\n"},
			want:  []Problem{{f, "Release/x", "apiVersion", `apiVersion "flotilla.dev/v1" is not supported: want flotilla.dev/v1alpha1`, 0}},
		},
		{
			name:  "Kubernetes object in the second document",
			files: map[string]string{f: release("a", validSpec) + "---\napiVersion: v1\nkind: ConfigMap\n"},
			want:  []Problem{{f, "document 2", "", `apiVersion "v1", kind "ConfigMap" is not a fleet object: want apiVersion flotilla.dev/v1alpha1 with kind Source, Release, Notification, Project or Window`, 0}},
		},
		{
			name:  "no apiVersion or kind",
			files: map[string]string{f: "metadata: {name: x}\n"},
			want:  []Problem{{f, "document 1", "", "apiVersion not set, kind not set is not a fleet object: want apiVersion flotilla.dev/v1alpha1 with kind Source, Release, Notification, Project or Window", 0}},
		},
		{
			name:  "not an object",
			files: map[string]string{f: "- a\n- b\n"},
			want:  []Problem{{f, "document 1", "", "must be an object with apiVersion and kind, not a list", 0}},
		},
		{
			name:  "syntax error gives the line in the file",
			files: map[string]string{f: release("a", validSpec) + "---\nkind: Release\nspec: [unclosed\n"},
			want:  []Problem{{f, "document 2", "", "yaml: line 9: did not find expected ',' or ']'", 0}},
		},
		{
			name:  "duplicate key",
			files: map[string]string{f: release("a", validSpec+"  source: again\n")},
			want:  []Problem{{f, "document 1", "", `yaml: unmarshal errors: line 7: key "source" already set in map`, 0}},
		},
		{
			name:  "unquoted number for a string",
			files: map[string]string{f: release("a", "  source: platform\n  targets: [{selector: {matchLabels: {tier: 1}}}]\n")},
			want:  []Problem{{f, "Release/a", "spec.targets[0].selector.matchLabels[tier]", "must be a string, not the number 1 (quote the value)", 0}},
		},
		{
			name:  "string for a boolean",
			files: map[string]string{f: release("a", validSpec+"  prune: \"true\"\n")},
			want:  []Problem{{f, "Release/a", "spec.prune", "must be true or false, not a string", 0}},
		},
		{
			name:  "number for a duration",
			files: map[string]string{f: release("a", validSpec+"  interval: 60\n")},
			want:  []Problem{{f, "Release/a", "spec.interval", `must be a duration such as "90s", "1m" or "1h30m", not the number 60`, 0}},
		},
		{
			name:  "bad duration",
			files: map[string]string{f: release("a", validSpec+"  timeout: 1 minute\n")},
			want:  []Problem{{f, "Release/a", "spec.timeout", `"1 minute" is not a duration: want Go duration syntax such as "90s", "1m" or "1h30m"`, 0}},
		},
		{
			name:  "source without git",
			files: map[string]string{s: "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: platform}\nspec: {interval: 1m}\n"},
			want:  []Problem{{s, "Source/platform", "spec", "set one of git, helm and oci: a source needs a Git repository, a Helm chart or an OCI artifact", 0}},
		},
		{
			name: "source git without url, two refs, bad semver",
			files: map[string]string{s: "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: platform}\n" +
				"spec: {git: {tag: v1, semver: 'not a range', commit: abc}}\n"},
			want: []Problem{
				{s, "Source/platform", "spec.git.url", "must be set", 0},
				{s, "Source/platform", "spec.git", "set at most one of branch, tag, semver and commit, not tag and semver and commit", 0},
				{s, "Source/platform", "spec.git.semver", `"not a range" is not a semver range: improper constraint: "not a range"`, 0},
			},
		},
		{
			name:  "source interval below the minimum",
			files: map[string]string{s: platformSource + "  interval: 1500ms\n"},
			want:  []Problem{{s, "Source/platform", "spec.interval", "must be at least 2s, not 1.5s", 0}},
		},
		{
			name:  "invalid names",
			files: map[string]string{f: release("Baseline_1", validSpec+"  namespace: Kube.System\n")},
			want: []Problem{
				{f, "Release/Baseline_1", "metadata.name", `"Baseline_1" is not a valid name: ` + strings.Join(content.IsDNS1123Label("Baseline_1"), "; "), 0},
				{f, "Release/Baseline_1", "spec.namespace", `"Kube.System" is not a valid namespace name: ` + strings.Join(content.IsDNS1123Label("Kube.System"), "; "), 0},
			},
		},
		{
			name:  "missing name",
			files: map[string]string{f: release(`""`, validSpec)},
			want:  []Problem{{f, "Release in document 1", "metadata.name", "must be set", 0}},
		},
		{
			name:  "invalid selector label key and value",
			files: map[string]string{f: release("a", "  source: platform\n  targets: [{selector: {}}, {selector: {matchLabels: {'-bad': 'a b'}}}]\n")},
			want: []Problem{
				{f, "Release/a", "spec.targets[1].selector.matchLabels[-bad]", `label key "-bad" is invalid: ` + strings.Join(content.IsLabelKey("-bad"), "; "), 0},
				{f, "Release/a", "spec.targets[1].selector.matchLabels[-bad]", `label value "a b" is invalid: ` + strings.Join(content.IsLabelValue("a b"), "; "), 0},
			},
		},
		{
			name:  "no targets",
			files: map[string]string{f: release("a", "  source: platform\n")},
			want:  []Problem{{f, "Release/a", "spec.targets", "must list at least one target (a target with an empty selector matches every cluster)", 0}},
		},
		{
			name:  "path leaving the source",
			files: map[string]string{f: release("a", validSpec+"  path: clusters/../../etc\n")},
			want:  []Problem{{f, "Release/a", "spec.path", `path "clusters/../../etc" must not contain ".."`, 0}},
		},
		{
			name:  "path template that does not parse",
			files: map[string]string{f: release("a", validSpec+"  path: 'clusters/{{ .Cluster.Name'\n")},
			want:  []Problem{{f, "Release/a", "spec.path", "template: path:1: unclosed action", 0}},
		},
		{
			name:  "path template naming a field that does not exist",
			files: map[string]string{f: release("a", validSpec+"  path: 'clusters/{{ .Region }}'\n")},
			want:  []Problem{{f, "Release/a", "spec.path", ".Region does not exist: a path template can use .Cluster.Name and .Cluster.Labels.<key>", 0}},
		},
		{
			name:  "path template that would build a string of any size",
			files: map[string]string{f: release("a", validSpec+"  path: '{{range 1000000000}}aaaa{{end}}'\n")},
			want: []Problem{{f, "Release/a", "spec.path",
				`range at path:1:8 is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`, 0}},
		},
		{
			name:  "path template calling a function other than index",
			files: map[string]string{f: release("a", validSpec+"  path: '{{ printf \"%0999999999d\" 0 }}'\n")},
			want: []Problem{{f, "Release/a", "spec.path",
				`printf "%0999999999d" 0 at path:1:3 is not allowed: a path template can use .Cluster.Name, .Cluster.Labels.<key> and index .Cluster.Labels "<key>"`, 0}},
		},
		{
			name:  "negative interval",
			files: map[string]string{f: release("a", validSpec+"  interval: -10m\n")},
			want:  []Problem{{f, "Release/a", "spec.interval", "must be positive, not -10m0s", 0}},
		},
		{
			name: "duplicate across files names the first file",
			files: map[string]string{
				"fleet/a.yaml": release("baseline", validSpec),
				"fleet/b.yaml": release("baseline", validSpec),
			},
			want: []Problem{{"fleet/b.yaml", "Release/baseline", "metadata.name", `Release "baseline" is already defined in fleet/a.yaml`, 0}},
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
			if diff := cmp.Diff(tt.want, got, ignoreLine); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse(map[string][]byte{
		"fleet/releases.yaml": []byte(release("baseline", "  source: platform\n  targets: [{selector: {}}]\n") +
			"---\n" + release("apps", "  source: platform\n")),
	})
	want := `fleet/releases.yaml line 1: Release/baseline: spec.source: source "platform" is not defined
fleet/releases.yaml line 8: Release/apps: spec.targets: must list at least one target (a target with an empty selector matches every cluster)
fleet/releases.yaml line 8: Release/apps: spec.source: source "platform" is not defined`
	if err == nil {
		t.Fatal("Parse: want an error")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEmpty(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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
	t.Parallel()
	f := &Fleet{
		Sources:  []Source{{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://x"}}}},
		Releases: []Release{{Spec: ReleaseSpec{Source: "platform", Targets: []Target{{}}}}},
	}
	var invalid *InvalidError
	if err := f.Validate(); !errors.As(err, &invalid) {
		t.Fatalf("Validate: want *InvalidError, got %v", err)
	}
	want := []Problem{{Object: "releases[0]", Field: "metadata.name", Message: "must be set"}}
	if diff := cmp.Diff(want, invalid.Problems, ignoreLine); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}

	f.Releases[0].Metadata.Name = "baseline"
	if err := f.Validate(); err != nil {
		t.Errorf("Validate of a valid fleet: %v", err)
	}
}

// ignoreLine leaves Problem.Line to TestProblemLines, so that the other tables stay readable.
var ignoreLine = cmpopts.IgnoreFields(Problem{}, "Line")

// A problem names the line where its object's document starts, after comments and blank
// lines, in every document of a file.
func TestProblemLines(t *testing.T) {
	t.Parallel()
	file := `# releases of the platform team

apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec: {git: {url: "https://example.com/x.git"}}
---
# the second one
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: baseline}
spec: {source: platfrom, path: x, targets: [{selector: {}}]}
--- 
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: other}
spec: {source: platform, path: x, targets: [{selector: {}}], colour: red}
`
	_, err := Parse(map[string][]byte{"fleet/releases.yaml": []byte(file)})
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("Parse: %v", err)
	}
	var got []string
	for _, p := range invalid.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`fleet/releases.yaml line 14: Release/other: spec.colour: unknown field "colour" (known fields: adopt, createNamespace, decryption, dependsOn, helm, ignore, interval, namespace, path, project, prune, renderBudget, respectManagers, rollout, selfHeal, source, suspend, targets, timeout, variables, wait)`,
		`fleet/releases.yaml line 9: Release/baseline: spec.source: source "platfrom" is not defined`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
