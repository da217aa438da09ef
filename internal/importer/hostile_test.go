package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileInputs: objects of the right kind with fields of the wrong type, values the hub
// refuses, and cycles never panic the importer nor make it write a fleet the hub refuses:
// what cannot be converted is reported.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	const app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\n"
	const appset = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s, namespace: argocd}\n"
	const proj = "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p, namespace: argocd}\n"
	const ks = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: %s, namespace: f}\n"
	const git = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: r, namespace: f}\nspec: {url: https://g.example.com/r.git, interval: 1m}\n---\n"
	tests := []struct {
		name, yaml string
		flux       bool
		wantLeft   string // a left-out message part
	}{
		{"spec is a string", app + "spec: hello\n", false, "no source"},
		{"source is a list", app + "spec: {source: [1, 2]}\n", false, "no source"},
		{"destination is a number", app + "spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: 5}\n", false, "no destination"},
		{"path escapes the source", app + "spec: {source: {repoURL: https://x.example/r.git, path: ../../etc}, destination: {name: c}}\n", false, "cannot be converted"},
		{"path is a template", app + "spec: {source: {repoURL: https://x.example/r.git, path: '{{ range 10 }}x{{ end }}'}, destination: {name: c}}\n", false, "cannot be converted"},
		{"bad namespace", app + "spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {name: c, namespace: Bad_NS}}\n", false, "not a valid namespace"},
		{"bad semver is a branch", app + "spec: {source: {repoURL: https://x.example/r.git, targetRevision: '>=x', path: p}, destination: {name: c}}\n", false, ""},
		{"ignore rule with a star kind and a bad pointer", app + "spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {name: c}, ignoreDifferences: [{group: '*', kind: '*', jsonPointers: ['/a', 'nope', '/b~2']}, {kind: 'Not A Kind', jsonPointers: ['/x']}]}\n", false, "not a JSON pointer"},
		{"label keys the hub refuses", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, labels: {'bad key!': v, ok: 'bad value!'}}\nspec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {name: c}}\n", false, ""},
		{"destination name no label value", app + "spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {name: '!!!'}}\n", false, ""},
		{"cluster generator with labels the hub refuses", appset + "spec: {generators: [{clusters: {selector: {matchLabels: {'a b': c}}}}], template: {metadata: {name: x}, spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {server: '{{server}}'}}}}\n", false, "not a Flotilla cluster label"},
		{"list element escaping the path", appset + "spec: {generators: [{list: {elements: [{p: '../x'}, {p: [1]}]}}], template: {metadata: {name: '{{p}}'}, spec: {source: {repoURL: https://x.example/r.git, path: 'a/{{p}}'}, destination: {name: c}}}}\n", false, "cannot be converted"},
		{"generators not a list", appset + "spec: {generators: {list: 1}, template: {spec: {}}}\n", false, ""},
		{"matrix of three", appset + "spec: {generators: [{matrix: {generators: [{list: {}}, {list: {}}, {list: {}}]}}], template: {spec: {}}}\n", false, "matrix of other than two"},
		{"project with bad patterns", proj + "spec: {sourceRepos: ['ftp://x/*', 'https://a@b/*', 'nope'], destinations: [{namespace: 'Bad_*', server: '*'}, {namespace: '!x', server: '*'}], clusterResourceWhitelist: [{group: 'apps/v1', kind: X}, {group: '', kind: ''}], destinationServiceAccounts: [{namespace: n, defaultServiceAccount: 'Bad SA'}]}\n", false, "not a Git scheme"},
		{"project name platform", "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: platform}\nspec: {}\n", false, "does not exist yet"},
		{"flux dependsOn cycle and self", git + strings.ReplaceAll(ks, "%s", "a") + "spec: {sourceRef: {kind: GitRepository, name: r}, path: ./a, dependsOn: [{name: b}, {name: a}, {name: b}]}\n---\n" + strings.ReplaceAll(ks, "%s", "b") + "spec: {sourceRef: {kind: GitRepository, name: r}, path: ./b, dependsOn: [{name: a}]}\n", true, "closes a cycle"},
		{"flux bad durations and path", git + strings.ReplaceAll(ks, "%s", "a") + "spec: {sourceRef: {kind: GitRepository, name: r}, path: /abs, interval: forever}\n---\n" + strings.ReplaceAll(ks, "%s", "b") + "spec: {sourceRef: {kind: GitRepository, name: r}, path: ok, interval: -1m, timeout: soon, targetNamespace: BAD}\n", true, "is not a duration"},
		{"flux wrong types", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: r, namespace: f}\nspec: [1]\n---\n" + strings.ReplaceAll(ks, "%s", "a") + "spec: {sourceRef: 3, postBuild: {substitute: [1]}}\n", true, "not in the input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := filepath.Join(dir, "in.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			conv := func(o []*Object) *Result { return ArgoCD(o, ArgoCDOptions{}) }
			if tt.flux {
				conv = func(o []*Object) *Result { return Flux(o, FluxOptions{Cluster: "c"}) }
			}
			res := run(t, p, conv)
			if err := res.Check(); err != nil {
				t.Fatalf("the importer wrote a fleet the hub refuses: %v", err)
			}
			if tt.wantLeft == "" {
				return
			}
			for _, f := range res.Report.Findings {
				if f.Level == LeftOut && strings.Contains(f.Message, tt.wantLeft) {
					return
				}
			}
			var b strings.Builder
			if err := res.Report.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			t.Errorf("no left-out line saying %q:\n%s", tt.wantLeft, b.String())
		})
	}
}

// TestFluxDefaultBranch: a GitRepository without ref follows master, as in Flux, not the
// remote's HEAD (which is what a Source without a ref would follow).
func TestFluxDefaultBranch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: r, namespace: f}\nspec: {url: https://g.example.com/r.git}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, p, func(o []*Object) *Result { return Flux(o, FluxOptions{}) })
	if len(res.Sources) != 1 || res.Sources[0].Spec.Git.Branch != "master" {
		t.Fatalf("sources %+v, want one on branch master", res.Sources)
	}
}

// TestUnknownFieldsReported: a field the converter does not know is a left-out line with its
// path, wherever it is, never dropped silently.
func TestUnknownFieldsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a, namespace: argocd}
spec:
  source: {repoURL: https://x.example/r.git, path: p, futureField: 1, directory: {recurse: true, newOption: x}}
  destination: {name: c}
  syncPolicy: {automated: {prune: true, selfHeal: true, somethingNew: true}, newPolicy: {a: 1}}
  weird: true
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s, namespace: argocd}
spec:
  generators: [{list: {elements: [{a: b}], template: {x: 1}}}]
  template: {metadata: {name: n}, spec: {source: {repoURL: https://x.example/r.git, path: p}, destination: {name: c}, later: 1}}
  newSetField: 1
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: k, namespace: f}
spec: {sourceRef: {kind: GitRepository, name: r}, path: p, newField: 1, postBuild: {substitute: {a: b}, newThing: 1}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: r, namespace: f}
spec: {url: https://x.example/r.git, ref: {branch: main}, newRepoField: 1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"argocd": {"spec.generators[0].list.template", "spec.template.spec.later", "spec.newSetField", "spec.source.futureField", "spec.source.directory.newOption", "spec.syncPolicy.automated.somethingNew", "spec.syncPolicy.newPolicy", "spec.weird"},
		"flux":   {"spec.newField", "spec.postBuild.newThing", "spec.newRepoField"},
	}
	for tool, fields := range want {
		conv := func(o []*Object) *Result { return ArgoCD(o, ArgoCDOptions{}) }
		if tool == "flux" {
			conv = func(o []*Object) *Result { return Flux(o, FluxOptions{}) }
		}
		res := run(t, p, conv)
		for _, field := range fields {
			found := false
			for _, f := range res.Report.Findings {
				found = found || (f.Level == LeftOut && f.Field == field)
			}
			if !found {
				var b strings.Builder
				if err := res.Report.WriteText(&b); err != nil {
					t.Fatal(err)
				}
				t.Errorf("%s: no left-out line for %s:\n%s", tool, field, b.String())
			}
		}
	}
}
