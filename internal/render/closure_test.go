package render_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/render"
)

// closureVars are the variables the fixtures use, so that they render rather than fail on
// an undefined variable.
var closureVars = map[string]string{"cluster_name": "eu-1", "region": "eu", "replicas": "2"}

// renderFixture is one render of the equivalence test: Root and Path of a fixture tree.
type renderFixture struct {
	name string
	opts render.Options
}

// testdataFixtures renders every directory under testdata (the fuzz corpora aside) from
// every directory above it up to testdata itself as the root: a kustomization's ../
// references stay inside some roots and leave others, and a directory holding fixtures is a
// plain directory with kustomizations below it.
func testdataFixtures(t *testing.T) []renderFixture {
	t.Helper()
	var out []renderFixture
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p == filepath.Join("testdata", "fuzz") {
			return filepath.SkipDir
		}
		for root := p; ; root = filepath.Dir(root) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, renderFixture{name: filepath.ToSlash(root) + ":" + filepath.ToSlash(rel), opts: render.Options{
				Root: root, Path: filepath.ToSlash(rel), Vars: closureVars,
				Helm: &render.Helm{ReleaseName: "rel", Namespace: "ns", IncludeCRDs: true},
			}})
			if root == "testdata" {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmFixtures are the charts of Helm's own tests that the chart tests render
// (TestRenderChartMatchesHelmOnHelmsCharts), each as a path of the directory holding it.
func helmFixtures(t *testing.T) []renderFixture {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v3").Output()
	if err != nil {
		t.Fatalf("go list -m helm.sh/helm/v3: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	var charts []renderFixture
	for _, dir := range []string{"cmd/helm/testdata/testcharts", "pkg/chart/loader/testdata"} {
		root := filepath.Join(mod, dir)
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(root, e.Name(), "Chart.yaml")); err == nil && e.IsDir() {
				charts = append(charts, renderFixture{name: "helm:" + dir + "/" + e.Name(), opts: render.Options{
					Root: root, Path: e.Name(), Vars: closureVars,
					Helm: &render.Helm{ReleaseName: "rel", Namespace: "ns", IncludeCRDs: true},
				}})
			}
		}
	}
	if len(charts) < 30 {
		t.Fatalf("found %d charts in %s, want Helm's test charts", len(charts), mod)
	}
	return charts
}

// TestClosureRendersAsTheWholeTree renders every fixture of the render tests twice: from the
// whole tree, and from a fresh directory holding only what Closure lists. The objects must
// be the same, byte for byte, or both renders fail with the same error; or Closure refuses
// the path with the error the whole tree's render fails with.
func TestClosureRendersAsTheWholeTree(t *testing.T) {
	t.Parallel()
	fixtures := append(testdataFixtures(t), helmFixtures(t)...)
	counts := map[string]int{}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			counts[sameRender(t, f.opts)]++
		})
	}
	t.Logf("%d fixtures: %v", len(fixtures), counts)
	// Floors, so that a renderer or a fixture change that makes everything fail shows.
	if counts["rendered"] < 60 || counts["failed"] < 20 || counts["refused"] < 1 {
		t.Errorf("outcomes %v: want at least 60 rendered, 20 failed alike, 1 refused", counts)
	}
}

// sameRender renders opts from its root and from a copy of its closure and says how it went:
// "rendered", "failed" (both alike) or "refused" (by Closure, as by the render).
func sameRender(t *testing.T, opts render.Options) string {
	t.Helper()
	ctx := context.Background()
	whole, wholeErr := render.Render(ctx, opts)
	names, err := render.Closure(ctx, opts.Root, opts.Path, render.ClosureLimits{})
	if err != nil {
		if wholeErr == nil {
			t.Fatalf("Closure refused %q (%v), which renders from the whole tree", opts.Path, err)
		}
		if !strings.HasSuffix(err.Error(), ": "+wholeErr.Error()) {
			t.Fatalf("Closure refused %q with\n  %v\nthe render fails with\n  %v", opts.Path, err, wholeErr)
		}
		return "refused"
	}
	copied := t.TempDir()
	copyEntries(t, opts.Root, copied, names)
	narrow := opts
	narrow.Root = copied
	part, partErr := render.Render(ctx, narrow)
	if wholeErr != nil || partErr != nil {
		w, p := errText(wholeErr, opts.Root), errText(partErr, copied)
		if w != p {
			t.Fatalf("render of %q, closure %v:\nwhole tree: %s\nclosure:    %s", opts.Path, names, w, p)
		}
		return "failed"
	}
	if diff := cmp.Diff(objectsJSON(t, whole), objectsJSON(t, part)); diff != "" {
		t.Fatalf("render of %q from its closure %v differs (-whole +closure):\n%s", opts.Path, names, diff)
	}
	return "rendered"
}

func errText(err error, root string) string {
	if err == nil {
		return "<nil>"
	}
	abs, _ := filepath.Abs(root)
	real, _ := filepath.EvalSymlinks(abs)
	s := err.Error()
	for _, r := range []string{real, abs, root} {
		if r != "" {
			s = strings.ReplaceAll(s, r, "<root>")
		}
	}
	return s
}

func objectsJSON(t *testing.T, objs any) string {
	t.Helper()
	b, err := json.MarshalIndent(objs, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyEntries copies the closure's entries from src to dst: directories, regular files, and
// symlinks as symlinks, as artifact.PackFiles packs them.
func copyEntries(t *testing.T, src, dst string, names []string) {
	t.Helper()
	for _, n := range names {
		from, to := filepath.Join(src, filepath.FromSlash(n)), filepath.Join(dst, filepath.FromSlash(n))
		fi, err := os.Lstat(from)
		if err != nil {
			t.Fatalf("closure entry %s: %v", n, err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.IsDir():
			err = os.MkdirAll(to, 0o755)
		case fi.Mode()&fs.ModeSymlink != 0:
			var link string
			if link, err = os.Readlink(from); err == nil {
				err = os.Symlink(link, to)
			}
		case fi.Mode().IsRegular():
			var data []byte
			if data, err = os.ReadFile(from); err == nil {
				err = os.WriteFile(to, data, 0o644)
			}
		default:
			t.Fatalf("closure entry %s is a %s", n, fi.Mode().Type())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// regularFiles lists the closure's regular files and symlinks: what a user would check.
func regularFiles(t *testing.T, root string, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			t.Fatalf("closure entry %s: %v", n, err)
		}
		if !fi.IsDir() {
			out = append(out, n)
		}
	}
	return out
}

// TestClosureLists pins what the closure of the kinds of path holds, and what it leaves out.
func TestClosureLists(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"closure/overlay", []string{
			"closure/base/cm.yaml", "closure/base/deploy.yaml", "closure/base/kustomization.yaml",
			"closure/components/monitoring/kustomization.yaml", "closure/components/monitoring/monitor.yaml", "closure/components/monitoring/rules.txt",
			"closure/overlay/.env", "closure/overlay/app.properties", "closure/overlay/config.yaml", "closure/overlay/json.yaml",
			"closure/overlay/kustomization.yaml", "closure/overlay/labels.yaml", "closure/overlay/patcher.yaml",
			"closure/overlay/patches/replicas.yaml", "closure/overlay/patches/transformed.yaml", "closure/overlay/repl.yaml",
			"closure/overlay/secret.env", "closure/overlay/sm.yaml", "closure/shared/config.json", "closure/shared/generated.txt",
		}},
		{"closure/chart", []string{
			"closure/chart/.helmignore", "closure/chart/Chart.yaml", "closure/chart/NOTES.md", "closure/chart/charts/sub/Chart.yaml",
			"closure/chart/charts/sub/templates/cm.yaml", "closure/chart/files/data.txt", "closure/chart/templates/cm.yaml", "closure/chart/values.yaml",
		}},
		{"closure/plain", []string{"closure/plain/a.yaml", "closure/plain/linked.yaml", "closure/plain/sub/b.json", "closure/shared/linked.yaml"}},
		{"closure/shared/config.json", []string{"closure/shared/config.json"}},
		{"closure/gone", nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			names, err := render.Closure(context.Background(), "testdata", tc.path, render.ClosureLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, regularFiles(t, "testdata", names)); diff != "" {
				t.Errorf("closure of %s (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// writeFiles creates files under a new directory; a value "->x" makes a symlink to x.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
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
	return root
}

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

// TestClosureRefuses: what would read outside the root, and what passes a bound, fails with
// an error naming the file and the reason.
func TestClosureRefuses(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(configMap("secret")), 0o644); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		many["apps/"+n+".yaml"] = configMap(n)
	}
	deep := map[string]string{"apps/" + strings.Repeat("d/", 5) + "cm.yaml": configMap("deep")}
	chain := map[string]string{}
	for i := range 5 {
		dir := "k/" + string(rune('a'+i))
		chain[dir+"/kustomization.yaml"] = "resources:\n- ../" + string(rune('a'+i+1)) + "\n"
	}
	chain["k/f/kustomization.yaml"] = "resources:\n- cm.yaml\n"
	chain["k/f/cm.yaml"] = configMap("f")
	for _, tc := range []struct {
		name   string
		files  map[string]string
		path   string
		lim    render.ClosureLimits
		want   string
		wantIs error
	}{
		{
			name:  "a path above the root",
			files: many, path: "../x",
			want: `closure of path "../x": render: path "../x" points outside the artifact root`, wantIs: render.ErrOutsideRoot,
		},
		{
			name:  "a path through a symlink out of the root",
			files: map[string]string{"apps": "->" + outside}, path: "apps",
			want: `closure of path "apps": render apps: path "apps" is a symlink that points outside the artifact root`, wantIs: render.ErrOutsideRoot,
		},
		{
			name:  "a manifest of a plain directory behind a symlink out of the root",
			files: map[string]string{"apps/a.yaml": configMap("a"), "apps/secret.yaml": "->" + filepath.Join(outside, "secret.yaml")}, path: "apps",
			want: `closure of path "apps": render apps/secret.yaml: symlink points outside the artifact root`, wantIs: render.ErrOutsideRoot,
		},
		{
			name:  "a kustomization's resource behind a symlink out of the root",
			files: map[string]string{"apps/kustomization.yaml": "resources:\n- shared/secret.yaml\n", "apps/shared": "->" + outside},
			path:  "apps",
			want:  `closure of path "apps": render apps/shared: symlink points outside the artifact root (resources[0] "shared/secret.yaml" in apps/kustomization.yaml)`, wantIs: render.ErrOutsideRoot,
		},
		{
			name:  "a generator's file behind a relative symlink climbing out of the root",
			files: map[string]string{"apps/kustomization.yaml": "configMapGenerator:\n- name: x\n  files:\n  - up/etc/passwd\n", "apps/up": "->../.."},
			path:  "apps",
			want:  `closure of path "apps": render apps/up: symlink points outside the artifact root (configMapGenerator[0].files[0] "up/etc/passwd" in apps/kustomization.yaml)`, wantIs: render.ErrOutsideRoot,
		},
		{
			name:  "a chart's template behind a symlink out of the root",
			files: map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "chart/templates/cm.yaml": "->" + filepath.Join(outside, "secret.yaml")},
			path:  "chart",
			want:  `closure of path "chart": render chart/templates/cm.yaml: symlink points outside the artifact root`, wantIs: render.ErrOutsideRoot,
		},
		{
			name: "too many files", files: many, path: "apps", lim: render.ClosureLimits{MaxEntries: 4},
			want: `closure of path "apps": apps/d.yaml: more than 4 entries`,
		},
		{
			name: "too many bytes", files: many, path: "apps", lim: render.ClosureLimits{MaxBytes: 100},
			want: `closure of path "apps": apps/b.yaml: more than 100 bytes`,
		},
		{
			name: "too deep a directory", files: deep, path: "apps", lim: render.ClosureLimits{MaxDepth: 3},
			want: `closure of path "apps": apps/d/d/d/d: more than 3 levels deep`,
		},
		{
			name: "too deep a chain of bases", files: chain, path: "k/a", lim: render.ClosureLimits{MaxDepth: 3},
			want: `closure of path "k/a": k/e: more than 3 levels deep`,
		},
		{
			name: "too many kustomizations", files: chain, path: "k/a", lim: render.ClosureLimits{MaxKustomizations: 2},
			want: `closure of path "k/a": k/c: more than 2 kustomizations`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, tc.files)
			names, err := render.Closure(context.Background(), root, tc.path, tc.lim)
			if err == nil {
				t.Fatalf("Closure = %v, want the error %q", names, tc.want)
			}
			if got := strings.ReplaceAll(err.Error(), outside, "<outside>"); got != tc.want {
				t.Errorf("Closure error\n  %s\nwant\n  %s", got, tc.want)
			}
			var le *render.ClosureLimitError
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
			if tc.wantIs == nil && !errors.As(err, &le) {
				t.Errorf("error is %T, want a *render.ClosureLimitError", err)
			}
			// The whole tree is in bounds by default: what fails is the bound alone.
			if tc.wantIs == nil {
				if _, err := render.Closure(context.Background(), root, tc.path, render.ClosureLimits{}); err != nil {
					t.Errorf("within the default limits: %v", err)
				}
			}
		})
	}
}

// TestClosureLeavesOutWhatTheRenderRefuses: remote, absolute, climbing and missing
// references are not in the closure and read nothing, and the closure's render refuses them
// as the whole tree's does.
func TestClosureLeavesOutWhatTheRenderRefuses(t *testing.T) {
	t.Parallel()
	root := writeFiles(t, map[string]string{
		"apps/kustomization.yaml":      "resources:\n- cm.yaml\n- ../../outside\n- https://github.com/org/repo//deploy?ref=v1\n- /etc/passwd\n- missing.yaml\n",
		"apps/cm.yaml":                 configMap("a"),
		"apps/helm/kustomization.yaml": "helmCharts:\n- name: podinfo\n  repo: https://stefanprodan.github.io/podinfo\n",
		"other/cm.yaml":                configMap("other"),
	})
	names, err := render.Closure(context.Background(), root, "apps", render.ClosureLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"apps/cm.yaml", "apps/kustomization.yaml"}, regularFiles(t, root, names)); diff != "" {
		t.Errorf("closure (-want +got):\n%s", diff)
	}
	for _, p := range []string{"apps", "apps/helm"} {
		if got := sameRender(t, render.Options{Root: root, Path: p}); got != "failed" {
			t.Errorf("render of %s: %s, want both renders to fail alike", p, got)
		}
	}
}

// TestClosureOfEncryptedFiles: SOPS-encrypted files are read as any other file, so they are
// in the closure as they are, and the closure decrypts and renders as the whole tree does.
func TestClosureOfEncryptedFiles(t *testing.T) {
	t.Parallel()
	eu, us := sopsKey(t), sopsKey(t)
	root := writeFiles(t, map[string]string{
		"plain/cm.yaml":           configMap("app") + "---\n" + encryptFor(t, dbSecret, eu),
		"plain/token.json":        encryptFor(t, `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "json-plaintext"}}`, eu),
		"kust/kustomization.yaml": "namespace: prod\nresources: [db.yaml, ../shared/cm.yaml]\n",
		"kust/db.yaml":            encryptFor(t, dbSecret, eu),
		"kust/us-only.yaml":       encryptFor(t, strings.Replace(dbSecret, "name: db", "name: us", 1), us),
		"shared/cm.yaml":          configMap("shared"),
	})
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"plain", []string{"plain/cm.yaml", "plain/token.json"}},
		{"kust", []string{"kust/db.yaml", "kust/kustomization.yaml", "shared/cm.yaml"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			names, err := render.Closure(context.Background(), root, tc.path, render.ClosureLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, regularFiles(t, root, names)); diff != "" {
				t.Errorf("closure (-want +got):\n%s", diff)
			}
			opts := render.Options{Root: root, Path: tc.path, Vars: closureVars, Decrypt: decryptorFor(t, "eu-1", eu)}
			if got := sameRender(t, opts); got != "rendered" {
				t.Errorf("render with decryption: %s, want it rendered from both", got)
			}
		})
	}
}

// TestClosureKeepsABrokenKustomizationLink: a kustomization file that is a broken symlink
// still makes its directory a kustomization for the renderer (which then fails), so the
// closure keeps the link: without it, the copy would render as a plain directory.
func TestClosureKeepsABrokenKustomizationLink(t *testing.T) {
	t.Parallel()
	root := writeFiles(t, map[string]string{
		"apps/kustomization.yaml": "->gone.yaml",
		"apps/cm.yaml":            configMap("a"),
	})
	if got := sameRender(t, render.Options{Root: root, Path: "apps"}); got != "failed" {
		t.Errorf("render: %s, want both renders to fail alike", got)
	}
}

// TestClosureRefusesAPluginConfigDirectory: a directory under generators is refused, by
// Closure as by the render, whether or not a kustomization is in it.
func TestClosureRefusesAPluginConfigDirectory(t *testing.T) {
	t.Parallel()
	root := writeFiles(t, map[string]string{
		"apps/kustomization.yaml":      "generators:\n- gen\n",
		"apps/gen/config.yaml":         configMap("x"),
		"built/kustomization.yaml":     "transformers:\n- gen\n",
		"built/gen/kustomization.yaml": "resources:\n- cm.yaml\n",
		"built/gen/cm.yaml":            configMap("y"),
	})
	for _, p := range []string{"apps", "built"} {
		if got := sameRender(t, render.Options{Root: root, Path: p}); got != "refused" {
			t.Errorf("render of %s: %s, want Closure to refuse it as the render does", p, got)
		}
		if _, err := render.Closure(context.Background(), root, p, render.ClosureLimits{}); !errors.Is(err, render.ErrConfigNotCheckable) {
			t.Errorf("Closure of %s = %v, want ErrConfigNotCheckable", p, err)
		}
	}
}
