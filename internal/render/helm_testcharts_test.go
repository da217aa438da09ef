package render_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/render"
)

// TestRenderChartMatchesHelmOnHelmsCharts renders the charts Helm's own tests use (the
// testdata of the helm.sh/helm/v3 module this build uses: subcharts with globals and
// import-values, library charts, schemas, notes, object order, charts that must fail) with
// render.Render and with the reference helm template, and requires the same objects, or an
// error from both.
func TestRenderChartMatchesHelmOnHelmsCharts(t *testing.T) {
	t.Parallel()
	helm := helmBinary(t)
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v3").Output()
	if err != nil {
		t.Fatalf("go list -m helm.sh/helm/v3: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	var charts []string
	for _, dir := range []string{"cmd/helm/testdata/testcharts", "pkg/chart/loader/testdata"} {
		entries, err := os.ReadDir(filepath.Join(mod, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(mod, dir, e.Name(), "Chart.yaml")); err == nil && e.IsDir() {
				charts = append(charts, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(charts) < 30 {
		t.Fatalf("found %d charts in %s, want Helm's test charts", len(charts), mod)
	}
	// Charts whose output helm template prints but that are no Kubernetes objects (helm
	// install refuses them too): render.Render refuses them as it refuses such a manifest,
	// naming the template.
	refused := map[string]string{
		"cmd/helm/testdata/testcharts/issue-9027": "render chart/charts/subchart/templates/values.yaml: rendered object: missing apiVersion, kind, metadata.name",
	}
	rendered := 0
	for _, chart := range charts {
		t.Run(chart, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join(mod, chart), filepath.Join(root, "chart"))
			helmOut, helmErr := helmTemplate(t, helm, "rel", filepath.Join(root, "chart"), "--namespace", "ns")
			objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "chart",
				Helm: &render.Helm{ReleaseName: "rel", Namespace: "ns", IncludeCRDs: true}})
			switch {
			case helmErr != nil && err != nil:
				return // both refuse it
			case helmErr != nil:
				t.Fatalf("helm template failed and render.Render did not:\n%v", helmErr)
			case refused[chart] != "":
				if err == nil || err.Error() != refused[chart] {
					t.Fatalf("render.Render = %v, want the error %q", err, refused[chart])
				}
				return
			case err != nil:
				t.Fatalf("render.Render failed and helm template did not: %v", err)
			}
			rendered++
			want := keyed(t, "helm template", dropRepeatedCRDs(parseStream(t, helmOut)))
			got := keyed(t, "render.Render", objs)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("objects differ from helm template (-helm +render):\n%s", diff)
			}
		})
	}
	if rendered < 15 {
		t.Errorf("only %d of %d charts rendered", rendered, len(charts))
	}
}

// copyTree copies a directory, symlinks as symlinks.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
