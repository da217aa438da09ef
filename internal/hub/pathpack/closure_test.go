package pathpack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/render"
)

// writeTree creates files under root; a value "->x" makes a symlink to x.
func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(content, "->"); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
}

func deploy(name string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx\n"
}

// base is a kustomize base that every layout has, with files nobody references.
var base = map[string]string{
	"base/kustomization.yaml":  "resources:\n- deploy.yaml\n- cm.yaml\n",
	"base/deploy.yaml":         deploy("web"),
	"base/cm.yaml":             cm("base"),
	"base/unused.yaml":         cm("unused"),
	"README.md":                "not read\n",
	"other/kustomization.yaml": "resources:\n- cm.yaml\n",
	"other/cm.yaml":            cm("other"),
}

func with(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

var layouts = []struct {
	name  string
	files map[string]string
	path  string
	want  []string // the files (and symlinks) of the closure; its directories are not listed
}{
	{
		name: "overlay with a base and a patch",
		files: with(map[string]string{
			"overlays/prod/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: replicas.yaml\n",
			"overlays/prod/replicas.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
			"overlays/prod/unused.yaml":        cm("x"),
			"overlays/dev/kustomization.yaml":  "resources:\n- ../../base\n",
		}),
		path: "overlays/prod",
		want: []string{"base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml", "overlays/prod/kustomization.yaml", "overlays/prod/replicas.yaml"},
	},
	{
		name: "cluster directory with a base, a component and a deprecated bases field",
		files: with(map[string]string{
			"clusters/a/kustomization.yaml":            "bases:\n- ../../base\ncomponents:\n- ../../components/monitoring\nresources:\n- own.yaml\n",
			"clusters/a/own.yaml":                      cm("a"),
			"clusters/b/kustomization.yaml":            "resources:\n- ../../base\n- own.yaml\n",
			"clusters/b/own.yaml":                      cm("b"),
			"components/monitoring/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- sm.yaml\n",
			"components/monitoring/sm.yaml":            cm("monitoring"),
		}),
		path: "clusters/a",
		want: []string{"base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml", "clusters/a/kustomization.yaml", "clusters/a/own.yaml",
			"components/monitoring/kustomization.yaml", "components/monitoring/sm.yaml"},
	},
	{
		name: "nested overlays reaching ../../base",
		files: with(map[string]string{
			"overlays/prod/kustomization.yaml":   "resources:\n- ../../base\nnamePrefix: prod-\n",
			"regions/eu/prod/kustomization.yaml": "resources:\n- ../../../overlays/prod\n- ../../../other\nlabels:\n- pairs:\n    region: eu\n",
			"regions/us/prod/kustomization.yaml": "resources:\n- ../../../overlays/prod\n",
		}),
		path: "regions/eu/prod",
		want: []string{"base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml", "other/cm.yaml", "other/kustomization.yaml",
			"overlays/prod/kustomization.yaml", "regions/eu/prod/kustomization.yaml"},
	},
	{
		name: "generators with files, envs and the deprecated env",
		files: with(map[string]string{
			"app/kustomization.yaml": "resources:\n- ../base\nconfigMapGenerator:\n- name: props\n  files:\n  - app.properties\n  - cfg.json=../shared/config.json\n  envs:\n  - .env\n" +
				"secretGenerator:\n- name: creds\n  env: secret.env\ngeneratorOptions:\n  disableNameSuffixHash: true\n",
			"app/app.properties":   "a=1\n",
			"app/.env":             "B=2\n",
			"app/secret.env":       "PASSWORD=x\n",
			"app/ignored.txt":      "never\n",
			"shared/config.json":   "{}\n",
			"shared/unrelated.txt": "never\n",
		}),
		path: "app",
		want: []string{"app/.env", "app/app.properties", "app/kustomization.yaml", "app/secret.env",
			"base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml", "shared/config.json"},
	},
	{
		name: "strategic-merge, JSON 6902 and replacement files, a transformer config file",
		files: with(map[string]string{
			"app/kustomization.yaml": "resources:\n- ../base\npatchesStrategicMerge:\n- sm.yaml\n- |-\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: base\n  data:\n    inline: yes\n" +
				"patchesJson6902:\n- target:\n    group: apps\n    version: v1\n    kind: Deployment\n    name: web\n  path: json.yaml\nreplacements:\n- path: repl.yaml\ntransformers:\n- labels.yaml\n- patcher.yaml\nconfigurations:\n- config.yaml\n",
			"app/sm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\ndata:\n  sm: yes\n",
			"app/json.yaml":      "- op: replace\n  path: /spec/replicas\n  value: 5\n",
			"app/repl.yaml":      "source:\n  kind: ConfigMap\n  name: base\n  fieldPath: data.k\ntargets:\n- select:\n    kind: Deployment\n  fieldPaths:\n  - metadata.annotations.k\n  options:\n    create: true\n",
			"app/labels.yaml":    "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\nlabels:\n  team: a\nfieldSpecs:\n- path: metadata/labels\n  create: true\n",
			"app/patcher.yaml":   "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: patches/p.yaml\ntarget:\n  kind: ConfigMap\n",
			"app/patches/p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: any\ndata:\n  patched: yes\n",
			"app/patches/q.yaml": "never\n",
			"app/config.yaml":    "namePrefix:\n- path: metadata/name\n",
		}),
		path: "app",
		want: []string{"app/config.yaml", "app/json.yaml", "app/kustomization.yaml", "app/labels.yaml", "app/patcher.yaml", "app/patches/p.yaml",
			"app/repl.yaml", "app/sm.yaml", "base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml"},
	},
	{
		name: "plain directory: its manifests below it, hidden and other files left out",
		files: with(map[string]string{
			"plain/a.yaml":         cm("a"),
			"plain/sub/b.yml":      cm("b"),
			"plain/sub/c.json":     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
			"plain/.hidden.yaml":   cm("hidden"),
			"plain/.git/x.yaml":    cm("git"),
			"plain/README.md":      "never\n",
			"plain/.secret/d.yaml": cm("d"),
		}),
		path: "plain",
		want: []string{"plain/a.yaml", "plain/sub/b.yml", "plain/sub/c.json"},
	},
	{
		name: "chart: the whole directory, hidden files too",
		files: with(map[string]string{
			"charts/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			"charts/web/values.yaml":       "name: web\n",
			"charts/web/.helmignore":       "*.md\n",
			"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
			"charts/web/files/data.txt":    "x\n",
			"charts/other/Chart.yaml":      "apiVersion: v2\nname: other\nversion: 0.1.0\n",
		}),
		path: "charts/web",
		want: []string{"charts/web/.helmignore", "charts/web/Chart.yaml", "charts/web/files/data.txt", "charts/web/templates/cm.yaml", "charts/web/values.yaml"},
	},
	{
		name:  "a single file",
		files: with(map[string]string{"values/prod.yaml": "replicas: 3\n", "values/dev.yaml": "replicas: 1\n"}),
		path:  "values/prod.yaml",
		want:  []string{"values/prod.yaml"},
	},
	{
		name: "symlinks inside the source are kept with what they point to",
		files: with(map[string]string{
			"clusters/a/kustomization.yaml": "resources:\n- ../../base\n- shared.yaml\n",
			"clusters/a/shared.yaml":        "->../../shared/cm.yaml",
			"clusters/c":                    "->a",
			"shared/cm.yaml":                cm("shared"),
			"shared/other.yaml":             cm("never"),
		}),
		path: "clusters/c",
		want: []string{"base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml", "clusters/a/kustomization.yaml", "clusters/a/shared.yaml",
			"clusters/c", "shared/cm.yaml"},
	},
	{
		name: "references outside the source, missing or remote are left out",
		files: with(map[string]string{
			"app/kustomization.yaml": "resources:\n- ../base\n- missing.yaml\n- ../../outside\n- https://github.com/org/repo//deploy?ref=v1\n- github.com/org/repo\n- /etc/passwd\n",
		}),
		path: "app",
		want: []string{"app/kustomization.yaml", "base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml"},
	},
	{
		name: "a cycle of kustomizations terminates",
		files: with(map[string]string{
			"a/kustomization.yaml": "resources:\n- ../b\n- cm.yaml\n",
			"a/cm.yaml":            cm("a"),
			"b/kustomization.yaml": "resources:\n- ../a\n",
		}),
		path: "a",
		want: []string{"a/cm.yaml", "a/kustomization.yaml", "b/kustomization.yaml"},
	},
	{
		// A symlink out of the source is refused (render.Closure), but no source artifact
		// holds one: artifact.Pack refuses them.
		name: "a symlink loop is left out, a symlink up a level not followed",
		files: with(map[string]string{
			"app/kustomization.yaml": "resources:\n- ../base\n- loop.yaml\n",
			"app/loop.yaml":          "->loop.yaml",
			"plain2/a.yaml":          cm("a"),
			"plain2/up":              "->..",
		}),
		path: "app",
		want: []string{"app/kustomization.yaml", "base/cm.yaml", "base/deploy.yaml", "base/kustomization.yaml"},
	},
	{
		name:  "a path that does not exist has an empty closure",
		files: with(nil),
		path:  "clusters/gone",
		want:  nil,
	},
}

// files lists the closure without its directories.
func files(t *testing.T, root string, entries []string) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(root, e))
		if err != nil {
			t.Fatalf("closure entry %s: %v", e, err)
		}
		if !fi.IsDir() {
			out = append(out, e)
		}
	}
	return out
}

func TestClosure(t *testing.T) {
	t.Parallel()
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeTree(t, root, tc.files)
			got, err := render.Closure(context.Background(), root, tc.path, render.DefaultClosureLimits())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, files(t, root, got)); diff != "" {
				t.Errorf("closure of %s (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// TestClosureRendersAsTheSource renders every layout's path as the agent does, once from
// the whole source and once from the artifact of its closure, unpacked: the objects, or
// the error, are the same.
func TestClosureRendersAsTheSource(t *testing.T) {
	t.Parallel()
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if strings.HasSuffix(tc.path, ".yaml") {
				return // a values file is not rendered by itself
			}
			root := t.TempDir()
			writeTree(t, root, tc.files)
			entries, err := render.Closure(context.Background(), root, tc.path, render.DefaultClosureLimits())
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, _, err := artifact.PackFiles(context.Background(), root, entries, &buf); err != nil {
				t.Fatal(err)
			}
			packed := t.TempDir()
			if err := artifact.Unpack(context.Background(), &buf, packed, artifact.DefaultLimits()); err != nil {
				t.Fatal(err)
			}
			whole, wholeErr := renderJSON(root, tc.path)
			narrow, narrowErr := renderJSON(packed, tc.path)
			if wholeErr != "" || narrowErr != "" {
				t.Logf("both fail: %s", wholeErr)
				if wholeErr != narrowErr {
					t.Errorf("render errors differ:\nwhole source: %s\nclosure:      %s", wholeErr, narrowErr)
				}
				return
			}
			if whole == "" || whole == "null" {
				t.Fatalf("the whole source renders nothing for %s: the layout tests nothing", tc.path)
			}
			if whole != narrow {
				t.Errorf("render of %s differs:\nwhole source: %s\nclosure:      %s", tc.path, whole, narrow)
			}
		})
	}
}

func renderJSON(root, p string) (string, string) {
	objs, err := render.Render(context.Background(), render.Options{Root: root, Path: p})
	if err != nil {
		return "", strings.ReplaceAll(err.Error(), root, "<root>")
	}
	b, err := json.Marshal(objs)
	if err != nil {
		return "", err.Error()
	}
	return string(b), ""
}

func TestClosureLimits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	chain := map[string]string{}
	for i := range 10 {
		chain[filepath.ToSlash(filepath.Join("k", string(rune('a'+i)), "kustomization.yaml"))] = "resources:\n- ../" + string(rune('a'+i+1)) + "\n- cm.yaml\n"
		chain[filepath.ToSlash(filepath.Join("k", string(rune('a'+i)), "cm.yaml"))] = cm(string(rune('a' + i)))
	}
	writeTree(t, root, with(chain))
	for _, tc := range []struct {
		name string
		lim  render.ClosureLimits
		want string
	}{
		{"entries", render.ClosureLimits{MaxEntries: 5, MaxBytes: 1 << 20, MaxKustomizations: 100, MaxDepth: 64}, `closure of path "k/a": k/c/kustomization.yaml: more than 5 entries`},
		{"bytes", render.ClosureLimits{MaxEntries: 1000, MaxBytes: 100, MaxKustomizations: 100, MaxDepth: 64}, `closure of path "k/a": k/d/kustomization.yaml: more than 100 bytes`},
		{"kustomizations", render.ClosureLimits{MaxEntries: 1000, MaxBytes: 1 << 20, MaxKustomizations: 3, MaxDepth: 64}, `closure of path "k/a": k/d: more than 3 kustomizations`},
		{"depth", render.ClosureLimits{MaxEntries: 1000, MaxBytes: 1 << 20, MaxKustomizations: 100, MaxDepth: 4}, `closure of path "k/a": k/f: more than 4 levels deep`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render.Closure(context.Background(), root, "k/a", tc.lim)
			var le *render.ClosureLimitError
			if !errors.As(err, &le) || err.Error() != tc.want {
				t.Errorf("Closure = %v, want the LimitError %q", err, tc.want)
			}
		})
	}
	got, err := render.Closure(context.Background(), root, "k/a", render.DefaultClosureLimits())
	if err != nil || !slices.Contains(got, "k/j/cm.yaml") {
		t.Errorf("within the default limits: %v, %v; want the whole chain", got, err)
	}
}

func TestClosureHonoursContext(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, layouts[0].files)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := render.Closure(ctx, root, "overlays/prod", render.DefaultClosureLimits()); !errors.Is(err, context.Canceled) {
		t.Errorf("Closure with a cancelled context = %v, want context.Canceled", err)
	}
}
