package render_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

// ids names objects the way a user lists them: Kind/namespace/name, in render order.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		if o.GetNamespace() == "" {
			out[i] = o.GetKind() + "/" + o.GetName()
		} else {
			out[i] = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
	}
	return out
}

// writeTree writes files (slash paths to contents) under a new temporary directory and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o.Object
		}
	}
	t.Fatalf("no %s/%s in %v", kind, name, ids(objs))
	return nil
}

func TestRenderPlainDirectory(t *testing.T) {
	t.Parallel()
	objs, err := render.Render(t.Context(), render.Options{Root: "testdata/plain"})
	if err != nil {
		t.Fatal(err)
	}
	// Path order across directories; multi-document files in document order; the List's items
	// in place; hidden files, README.md and the local-config object left out.
	want := []string{
		"StatefulSet/apps/db",     // apps/db/db.yml
		"ServiceAccount/apps/web", // apps/list.yaml, item 1
		"ServiceAccount/apps/db",  // apps/list.yaml, item 2
		"ConfigMap/apps/web",      // apps/web.yaml, document 2 (document 1 is only a comment)
		"Service/apps/web",        // apps/web.yaml, document 4 (document 3 is empty)
		"Namespace/apps",          // namespace.json
	}
	if diff := cmp.Diff(want, ids(objs)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	t.Run("JSON file keeps its values and numbers become int64", func(t *testing.T) {
		want := map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata":   map[string]any{"name": "apps", "labels": map[string]any{"tier": "1"}},
		}
		if diff := cmp.Diff(want, find(t, objs, "Namespace", "apps")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if got := find(t, objs, "StatefulSet", "db")["spec"]; !cmp.Equal(got, map[string]any{"replicas": int64(3)}) {
			t.Errorf("spec = %#v, want replicas int64(3)", got)
		}
	})
	t.Run("YAML 1.2 scalars stay as written", func(t *testing.T) {
		want := map[string]any{"greeting": "hello", "enabled": "yes", "started": "2024-01-02"}
		if diff := cmp.Diff(want, find(t, objs, "ConfigMap", "web")["data"]); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
	})
	t.Run("objects can be deep-copied", func(t *testing.T) {
		for _, o := range objs {
			_ = o.DeepCopy() // panics on value types unstructured does not support
		}
	})
}

func TestRenderKustomizationWithBaseInsideRoot(t *testing.T) {
	t.Parallel()
	objs, err := render.Render(t.Context(), render.Options{
		Root: "testdata/overlay",
		Path: "apps/prod",
		Vars: render.ClusterVars("edge-1", map[string]string{"region": "eu-west"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			// No config.kubernetes.io/origin: Render asked kustomize for it and removed it.
			"metadata": map[string]any{"name": "web", "namespace": "prod"},
			"spec": map[string]any{
				"replicas": int64(1), // "${replicas:=1}" became a number, as in Flux
				"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{
						"name":  "web",
						"image": "nginx:1.27",
						"env":   []any{map[string]any{"name": "CLUSTER", "value": "edge-1"}},
					}}},
				},
			},
		}},
		{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": "web-config", "namespace": "prod"},
			"data":       map[string]any{"region": "eu-west"},
		}},
	}
	if diff := cmp.Diff(want, objs); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

func TestRenderKustomizationKeepsOriginAnnotationsTheUserAskedFor(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\nbuildMetadata: [originAnnotations]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
	})
	objs, err := render.Render(t.Context(), render.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"config.kubernetes.io/origin": "path: cm.yaml\n"}
	if diff := cmp.Diff(want, objs[0].GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestRenderSubstitution(t *testing.T) {
	t.Parallel()
	objs, err := render.Render(t.Context(), render.Options{
		Root: "testdata/subst",
		Vars: map[string]string{"cluster_name": "edge-1", "image_tag": "1.27.3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantWeb := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "default"}, // ${namespace:=default}
		"spec": map[string]any{
			"replicas": int64(2), // ${replicas:-2}, a number after substitution
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
				"name":  "web",
				"image": "nginx:1.27.3",
				// $HOME is not Flux syntax and stays; $${...} is the escape for a literal ${...}.
				"command": []any{"sh", "-c", "echo $HOME ${cluster_name}"},
				"env": []any{
					map[string]any{"name": "CLUSTER", "value": "edge-1"},
					map[string]any{"name": "REGION", "value": "unknown"},
				},
			}}}},
		},
	}
	if diff := cmp.Diff(wantWeb, find(t, objs, "Deployment", "web")); diff != "" {
		t.Errorf("Deployment/web (-want +got):\n%s", diff)
	}
	t.Run("disabled by annotation", func(t *testing.T) {
		want := map[string]any{"run.sh": "echo ${not_a_variable} $${kept}"}
		if diff := cmp.Diff(want, find(t, objs, "ConfigMap", "script")["data"]); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
	})
}

// TestRenderSubstitutionSyntax pins the variable syntax to Flux's postBuild.substitute.
func TestRenderSubstitutionSyntax(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"name": "web", "empty": "", "multi": "a\nb"}
	tests := []struct {
		value string
		want  string
	}{
		{value: "${name}", want: "web"},
		{value: "x-${name}-y", want: "x-web-y"},
		{value: "$name", want: "$name"},
		{value: "$${name}", want: "${name}"},
		{value: "${unset:=fallback}", want: "fallback"},
		{value: "${unset:-fallback}", want: "fallback"},
		{value: "${empty:=fallback}", want: "fallback"},
		{value: "${empty}", want: ""},
		{value: "${name:=fallback}", want: "web"},
		{value: "${multi}", want: "ab"}, // newlines are removed from values, as Flux does
		{value: "no variables", want: "no variables"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			root := writeTree(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  v: '" + tt.value + "'\n"})
			objs, err := render.Render(t.Context(), render.Options{Root: root, Vars: vars})
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedString(objs[0].Object, "data", "v")
			if got != tt.want {
				t.Errorf("%q rendered as %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// opts returns the options; fixtures that need symlinks or temporary files build them.
		opts    func(t *testing.T) render.Options
		wantIs  error    // sentinel, when the refusal has one
		wantMsg []string // substrings of the error message
	}{
		{
			name:    "kustomization resource escaping the root",
			opts:    fixture("escape/root", "apps", nil),
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{"render apps/kustomization.yaml:", `resources[0]: "../../outside" points outside the artifact root`},
		},
		{
			name:    "remote https resource",
			opts:    fixture("remote", "https", nil),
			wantIs:  render.ErrRemoteNotAllowed,
			wantMsg: []string{`render https/kustomization.yaml: resources[0]: remote reference "https://github.com/x/y" refused: rendering reads only the artifact`},
		},
		{
			name:    "remote github.com component",
			opts:    fixture("remote", "github", nil),
			wantIs:  render.ErrRemoteNotAllowed,
			wantMsg: []string{"github/kustomization.yaml", `components[0]: remote reference "github.com/x/y//components/z?ref=v1" refused`},
		},
		{
			name:    "remote git@ resource",
			opts:    fixture("remote", "scp", nil),
			wantIs:  render.ErrRemoteNotAllowed,
			wantMsg: []string{"scp/kustomization.yaml", `resources[0]: remote reference "git@github.com:x/y.git" refused`},
		},
		{
			name:    "remote patch file",
			opts:    fixture("remote", "patchurl", nil),
			wantIs:  render.ErrRemoteNotAllowed,
			wantMsg: []string{"patchurl/kustomization.yaml", `patches[0].path: remote reference "https://example.com/patch.yaml" refused`},
		},
		{
			name:    "remote resource in a base names the base",
			opts:    fixture("remote", "nested/overlay", nil),
			wantIs:  render.ErrRemoteNotAllowed,
			wantMsg: []string{"render nested/base/kustomization.yaml:", `resources[1]: remote reference "ssh://git@example.com/x/y.git" refused`},
		},
		{
			name:    "exec plugin",
			opts:    fixture("plugin", "exec", nil),
			wantIs:  render.ErrPluginsNotAllowed,
			wantMsg: []string{"render exec/kustomization.yaml:", "plugins are not allowed", "SecretsFromVault"},
		},
		{
			name:    "container function transformer",
			opts:    fixture("plugin", "container", nil),
			wantIs:  render.ErrPluginsNotAllowed,
			wantMsg: []string{"render container/kustomization.yaml:", "plugins are not allowed", "SetTeam"},
		},
		{
			name:    "helmCharts",
			opts:    fixture("helm", "charts", nil),
			wantIs:  render.ErrHelmNotAllowed,
			wantMsg: []string{"render charts/kustomization.yaml: helmCharts refused: helm charts are not allowed"},
		},
		{
			name:    "HelmChartInflationGenerator config",
			opts:    fixture("helm", "generator", nil),
			wantIs:  render.ErrHelmNotAllowed,
			wantMsg: []string{"render generator/chart.yaml: HelmChartInflationGenerator refused"},
		},
		{
			name:    "undefined variable in a plain file",
			opts:    fixture("missingvar", "", map[string]string{"cluster_name": "edge-1"}),
			wantIs:  render.ErrUndefinedVariable,
			wantMsg: []string{"render apps/web.yaml:9: ConfigMap/apps/web: undefined variable \"cluster_region\""},
		},
		{
			name:    "undefined variable in kustomize output names the source file",
			opts:    fixture("missingvar-kustomize", "", map[string]string{"cluster_name": "edge-1"}),
			wantIs:  render.ErrUndefinedVariable,
			wantMsg: []string{"render base/web.yaml: ConfigMap/apps/web: undefined variable \"cluster_region\""},
		},
		{
			name:    "malformed YAML",
			opts:    fixture("malformed", "", nil),
			wantMsg: []string{"render apps/web.yaml:12: yaml: mapping values are not allowed in this context"},
		},
		{
			name:    "malformed JSON",
			opts:    tree(map[string]string{"a/ns.json": "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Namespace\"\n  \"metadata\": {}\n}\n"}, ""),
			wantMsg: []string{"render a/ns.json:4: json: invalid character"},
		},
		{
			name:    "object without a name",
			opts:    tree(map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n\napiVersion: v1\nkind: ConfigMap\n"}, ""),
			wantMsg: []string{"render cm.yaml:7: document 2: missing metadata.name"},
		},
		{
			name:    "List item without a kind",
			opts:    tree(map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {name: a}\n"}, ""),
			wantMsg: []string{"render list.yaml:1: document 1, item 1: missing kind"},
		},
		{
			name:    "a scalar document",
			opts:    tree(map[string]string{"x.yaml": "just text\n"}, ""),
			wantMsg: []string{"render x.yaml:1: document 1: want a Kubernetes object, got a string"},
		},
		{
			name:    "duplicate key",
			opts:    tree(map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n"}, ""),
			wantMsg: []string{`render cm.yaml:5: yaml: mapping key "name" already defined at line 4`},
		},
		{
			name:    "kustomization below a plain directory",
			opts:    tree(map[string]string{"apps/kustomization.yaml": "resources: []\n"}, ""),
			wantMsg: []string{"render apps/kustomization.yaml: kustomization below a plain directory"},
		},
		{
			name:    "path escaping the root",
			opts:    fixture("plain", "../..", nil),
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{`render: path "../.." points outside the artifact root`},
		},
		{
			name:    "path escaping the root after a directory",
			opts:    fixture("plain", "apps/../../..", nil),
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{`path "apps/../../.." points outside the artifact root`},
		},
		{
			name:   "absolute path",
			opts:   fixture("plain", "/etc", nil),
			wantIs: render.ErrOutsideRoot,
		},
		{
			name: "path that is a symlink out of the root",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: outside}\n"})
				root := t.TempDir()
				symlink(t, outside, filepath.Join(root, "apps"))
				return render.Options{Root: root, Path: "apps"}
			},
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{"render apps:", `path "apps" is a symlink that points outside the artifact root`},
		},
		{
			name: "symlinked file out of the root",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"})
				root := writeTree(t, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
				symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(root, "apps", "secret.yaml"))
				return render.Options{Root: root}
			},
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{"render apps/secret.yaml: symlink points outside the artifact root"},
		},
		{
			name: "symlinked directory out of the root",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"})
				root := t.TempDir()
				symlink(t, outside, filepath.Join(root, "shared"))
				return render.Options{Root: root}
			},
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{"render shared: symlink points outside the artifact root"},
		},
		{
			name: "kustomization resource that is a symlink out of the root",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"})
				root := writeTree(t, map[string]string{"kustomization.yaml": "resources: [secret.yaml]\n"})
				symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(root, "secret.yaml"))
				return render.Options{Root: root}
			},
			wantIs:  render.ErrOutsideRoot,
			wantMsg: []string{"render secret.yaml: symlink points outside the artifact root", `resources[0] "secret.yaml" in kustomization.yaml`},
		},
		{
			name: "broken symlink",
			opts: func(t *testing.T) render.Options {
				root := t.TempDir()
				symlink(t, "missing.yaml", filepath.Join(root, "web.yaml"))
				return render.Options{Root: root}
			},
			wantMsg: []string{"render web.yaml: broken symlink"},
		},
		{
			name: "symlink cycle",
			opts: func(t *testing.T) render.Options {
				root := writeTree(t, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
				symlink(t, "..", filepath.Join(root, "apps", "loop"))
				return render.Options{Root: root}
			},
			wantMsg: []string{"render apps/loop: symlink cycle"},
		},
		{
			name:    "path that is a file",
			opts:    fixture("plain", "namespace.json", nil),
			wantMsg: []string{`render namespace.json: path "namespace.json" is not a directory`},
		},
		{
			name:    "invalid variable name",
			opts:    fixture("plain", "", map[string]string{"bad-name": "x"}),
			wantMsg: []string{`render: variable name "bad-name" is invalid`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := render.Render(t.Context(), tt.opts(t))
			if err == nil {
				t.Fatalf("no error; rendered %v", ids(objs))
			}
			var re *render.Error
			if !errors.As(err, &re) {
				t.Errorf("error is %T, want *render.Error: %v", err, err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func fixture(root, path string, vars map[string]string) func(*testing.T) render.Options {
	return func(*testing.T) render.Options {
		return render.Options{Root: filepath.Join("testdata", root), Path: path, Vars: vars}
	}
}

func tree(files map[string]string, path string) func(*testing.T) render.Options {
	return func(t *testing.T) render.Options {
		return render.Options{Root: writeTree(t, files), Path: path}
	}
}

func TestRenderErrorFields(t *testing.T) {
	t.Parallel()
	_, err := render.Render(t.Context(), render.Options{Root: "testdata/missingvar", Vars: map[string]string{"cluster_name": "edge-1"}})
	var re *render.Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *render.Error", err)
	}
	want := render.Error{File: "apps/web.yaml", Line: 9, Object: "ConfigMap/apps/web"}
	got := render.Error{File: re.File, Line: re.Line, Object: re.Object}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error fields (-want +got):\n%s", diff)
	}
}

func TestRenderFollowsSymlinksInsideTheRoot(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"shared/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
		"apps/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n",
		"apps/prod/kustomization.yaml": "resources: [../base, shared.yaml]\n",
	})
	symlink(t, "../../shared/cm.yaml", filepath.Join(root, "apps", "prod", "shared.yaml"))
	symlink(t, "shared", filepath.Join(root, "linked"))

	for _, tt := range []struct {
		path string
		want []string
	}{
		{path: "apps/prod", want: []string{"ConfigMap/base", "ConfigMap/shared"}},
		{path: "linked", want: []string{"ConfigMap/shared"}},
	} {
		t.Run(tt.path, func(t *testing.T) {
			objs, err := render.Render(t.Context(), render.Options{Root: root, Path: tt.path})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(objs)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := render.Render(ctx, render.Options{Root: "testdata/plain"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

// TestRenderConcurrentKustomizeBuilds runs builds in parallel so that the race detector sees kustomize's
// process-wide state.
func TestRenderConcurrentKustomizeBuilds(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = render.Render(t.Context(), render.Options{Root: "testdata/overlay", Path: "apps/prod", Vars: map[string]string{"cluster_name": "c"}})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRenderClusterVars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{name: "no labels", want: map[string]string{"cluster_name": "edge-1"}},
		{
			name:   "label keys become identifiers",
			labels: map[string]string{"region": "eu", "topology.kubernetes.io/zone": "eu-1a", "tier-ü": "gold"},
			want: map[string]string{
				"cluster_name":                              "edge-1",
				"cluster_label_region":                      "eu",
				"cluster_label_topology_kubernetes_io_zone": "eu-1a",
				"cluster_label_tier__":                      "gold",
			},
		},
		{
			name:   "colliding keys: the one sorting last wins",
			labels: map[string]string{"a.b": "dot", "a-b": "dash"},
			want:   map[string]string{"cluster_name": "edge-1", "cluster_label_a_b": "dot"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, render.ClusterVars("edge-1", tt.labels)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderSubstitutionKeepsQuotedStrings checks the Flux behaviour users rely on to keep a value a
// string: a quoted "${port}" stays a string, an unquoted one becomes a number.
func TestRenderSubstitutionKeepsQuotedStrings(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"port": "8080"}
	cm := func(value string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  port: " + value + "\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		path  string
		want  any
	}{
		{name: "plain YAML", files: map[string]string{"p.yaml": cm("${port}")}, want: int64(8080)},
		{name: "double-quoted YAML", files: map[string]string{"p.yaml": cm(`"${port}"`)}, want: "8080"},
		{name: "single-quoted YAML", files: map[string]string{"p.yaml": cm(`'${port}'`)}, want: "8080"},
		{name: "comment with an undefined variable", files: map[string]string{"p.yaml": cm("${port} # ${not_defined}")}, want: int64(8080)},
		{
			name:  "JSON string",
			files: map[string]string{"p.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"port": "${port}"}}`},
			want:  "8080",
		},
		{
			name: "List item using an anchor from another item",
			files: map[string]string{"l.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: other}
  data: &shared {a: b}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec:
    port: ${port}
    data: *shared
`},
			want: int64(8080),
		},
		{
			name:  "kustomize output, plain",
			files: map[string]string{"kustomization.yaml": "resources: [p.yaml]\n", "p.yaml": cm("${port}")},
			want:  int64(8080),
		},
		{
			name:  "kustomize output, quoted",
			files: map[string]string{"kustomization.yaml": "resources: [p.yaml]\n", "p.yaml": cm(`"${port}"`)},
			want:  "8080",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := render.Render(t.Context(), render.Options{Root: writeTree(t, tt.files), Path: tt.path, Vars: vars})
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedFieldNoCopy(find(t, objs, "Pod", "p"), "spec", "port")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("spec.port (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderAccepts(t *testing.T) {
	t.Parallel()
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"
	tests := []struct {
		name string
		opts func(t *testing.T) render.Options
		want []string
	}{
		{
			name: "empty files and empty documents",
			opts: tree(map[string]string{"empty.yaml": "", "dashes.yaml": "---\n---\n", "comments.yml": "# nothing yet\n"}, ""),
			want: []string{},
		},
		{
			name: "concatenated JSON objects",
			opts: tree(map[string]string{"cms.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}`}, ""),
			want: []string{"ConfigMap/a", "ConfigMap/b"},
		},
		{
			name: "a symlink out of the root that is not a manifest",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"notes.txt": "private"})
				root := writeTree(t, map[string]string{"cm.yaml": fmt.Sprintf(cm, "a")})
				symlink(t, filepath.Join(outside, "notes.txt"), filepath.Join(root, "notes.txt"))
				return render.Options{Root: root}
			},
			want: []string{"ConfigMap/a"},
		},
		{
			name: "a kustomization next to unusable symlinks it does not use",
			opts: func(t *testing.T) render.Options {
				outside := writeTree(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n"})
				root := writeTree(t, map[string]string{
					"apps/kustomization.yaml": "resources: [cm.yaml]\n",
					"apps/cm.yaml":            fmt.Sprintf(cm, "a"),
				})
				symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(root, "secret.yaml"))
				symlink(t, "missing.yaml", filepath.Join(root, "broken.yaml"))
				symlink(t, "..", filepath.Join(root, "apps", "loop"))
				return render.Options{Root: root, Path: "apps"}
			},
			want: []string{"ConfigMap/a"},
		},
		{
			name: "configMapGenerator reading a hidden env file",
			opts: tree(map[string]string{
				"kustomization.yaml": "configMapGenerator:\n- name: env\n  envs: [.env]\ngeneratorOptions: {disableNameSuffixHash: true}\n",
				".env":               "A=1\n",
			}, ""),
			want: []string{"ConfigMap/env"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := render.Render(t.Context(), tt.opts(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(objs)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}
