package render_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

const tinyChartYAML = "apiVersion: v2\nname: tiny\nversion: 0.1.0\n"

const tinyConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  replicas: {{ .Values.replicas | quote }}
`

// tinyChart is a chart with one template, plus files.
func tinyChart(files map[string]string) map[string]string {
	out := map[string]string{
		"app/Chart.yaml":          tinyChartYAML,
		"app/values.yaml":         "replicas: 1\n",
		"app/templates/cm.yaml":   tinyConfigMap,
		"shared/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
		"app/templates/NOTES.txt": "installed\n",
	}
	for k, v := range files {
		if v == "" {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// TestRenderChartRefusals: each way a chart, its values or its rendering can be refused or
// fail, with the error a user sees. Every error is a *render.Error naming the file or the
// chart (name and version), and refusals wrap their sentinel.
func TestRenderChartRefusals(t *testing.T) {
	t.Parallel()
	bomb := bombArchive(t, 4<<20) // 4 MiB of zeros in a few kilobytes
	cases := []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, root string)
		helm  render.Helm
		lim   func(render.Helm) *render.Helm
		ctx   func(t *testing.T) context.Context
		is    error    // errors.Is, when set
		want  []string // substrings of the message
	}{
		{
			name:  "template error names the chart and Helm's position",
			files: map[string]string{"app/templates/bad.yaml": "kind: {{ .Values.x.y.z }}\n"},
			want:  []string{"render app: chart tiny 0.1.0: template: tiny/templates/bad.yaml:1:", "nil pointer evaluating interface {}.y"},
		},
		{
			name:  "template parse error",
			files: map[string]string{"app/templates/bad.yaml": "kind: {{ .Values.x \n"},
			want:  []string{"chart tiny 0.1.0:", "parse error", "tiny/templates/bad.yaml"},
		},
		{
			name:  "required value",
			files: map[string]string{"app/templates/need.yaml": `{{ required "image.repository is required" .Values.image }}`},
			want:  []string{"chart tiny 0.1.0:", "image.repository is required"},
		},
		{
			name:  "fail",
			files: map[string]string{"app/templates/fail.yaml": `{{ if lt (int .Values.replicas) 2 }}{{ fail "replicas must be at least 2 for HA" }}{{ end }}`},
			want:  []string{"chart tiny 0.1.0:", "replicas must be at least 2 for HA"},
		},
		{
			name: "dependency in Chart.yaml missing from charts/",
			files: map[string]string{"app/Chart.yaml": tinyChartYAML + `dependencies:
  - name: postgresql
    version: 12.1.0
    repository: https://charts.bitnami.com/bitnami
  - name: redis
    version: 17.0.0
    repository: https://charts.bitnami.com/bitnami
`, "app/charts/redis/Chart.yaml": "apiVersion: v2\nname: redis\nversion: 17.0.0\n"},
			want: []string{"chart tiny 0.1.0: dependencies missing: charts/postgresql (Chart.yaml); the agent never downloads charts"},
		},
		{
			name: "dependency in Chart.lock missing from charts/",
			files: map[string]string{"app/Chart.lock": `dependencies:
- name: common
  repository: https://charts.bitnami.com/bitnami
  version: 2.2.0
digest: sha256:aaaa
generated: "2024-01-01T00:00:00Z"
`},
			want: []string{"dependencies missing: charts/common (Chart.lock)"},
		},
		{
			name: "dependency of a subchart missing",
			files: map[string]string{
				"app/charts/db/Chart.yaml": "apiVersion: v2\nname: db\nversion: 1.0.0\ndependencies:\n  - name: backup\n    version: 1.0.0\n",
			},
			want: []string{"dependencies missing: charts/db/charts/backup (Chart.yaml)"},
		},
		{
			name: "symlink out of the root",
			setup: func(t *testing.T, root string) {
				symlinkT(t, "/etc/hostname", filepath.Join(root, "app", "templates", "host.yaml"))
			},
			is:   render.ErrOutsideRoot,
			want: []string{"render app/templates/host.yaml: symlink points outside the artifact root"},
		},
		{
			name: "ignored symlink out of the root is not read",
			setup: func(t *testing.T, root string) {
				writeChartFiles(t, root, map[string]string{"app/.helmignore": "secrets/\n"})
				symlinkT(t, "/etc", filepath.Join(root, "app", "secrets"))
			},
			is:   nil,
			want: nil,
		},
		{
			name: ".helmignore symlinked out of the root",
			setup: func(t *testing.T, root string) {
				symlinkT(t, "/etc/hostname", filepath.Join(root, "app", ".helmignore"))
			},
			is:   render.ErrOutsideRoot,
			want: []string{"render app/.helmignore: symlink points outside the artifact root"},
		},
		{
			name: "broken symlink",
			setup: func(t *testing.T, root string) {
				symlinkT(t, "nowhere.yaml", filepath.Join(root, "app", "templates", "gone.yaml"))
			},
			want: []string{"render app/templates/gone.yaml: broken symlink"},
		},
		{
			name:  "symlink loop",
			setup: func(t *testing.T, root string) { symlinkT(t, "..", filepath.Join(root, "app", "templates", "loop")) },
			want:  []string{"render app/templates/loop: symlink cycle"},
		},
		{
			name:  "too many files",
			files: map[string]string{"app/templates/a.yaml": "# a\n", "app/templates/b.yaml": "# b\n"},
			lim:   func(h render.Helm) *render.Helm { return render.WithHelmLimits(h, 0, 5, 0, 0) },
			want:  []string{"chart has more than 5 files"},
		},
		{
			name:  "chart too large",
			files: map[string]string{"app/files/blob.txt": strings.Repeat("x", 3000)},
			lim:   func(h render.Helm) *render.Helm { return render.WithHelmLimits(h, 2048, 0, 0, 0) },
			want:  []string{"render app/files/blob.txt: chart is larger than 2048 bytes"},
		},
		{
			name: "subchart archive that expands past the bound",
			setup: func(t *testing.T, root string) {
				writeFileT(t, filepath.Join(root, "app", "charts", "bomb-1.0.0.tgz"), bomb)
			},
			lim:  func(h render.Helm) *render.Helm { return render.WithHelmLimits(h, 1<<20, 0, 0, 0) },
			want: []string{"render app/charts/bomb-1.0.0.tgz:bomb/files/zeros: chart is larger than 1048576 bytes (subchart archives counted uncompressed)"},
		},
		{
			name: "values too large",
			helm: render.Helm{ValuesFiles: []render.ValuesFile{{Name: "values/big.yaml", Data: []byte("x: " + strings.Repeat("y", 200) + "\n")}}},
			lim:  func(h render.Helm) *render.Helm { return render.WithHelmLimits(h, 0, 0, 100, 0) },
			want: []string{"helm values are 204 bytes, more than the 100 allowed"},
		},
		{
			name:  "output too large",
			files: map[string]string{"app/templates/many.yaml": "{{ range until 50 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ . }}\n{{ end }}"},
			lim:   func(h render.Helm) *render.Helm { return render.WithHelmLimits(h, 0, 0, 0, 1000) },
			want:  []string{"chart tiny 0.1.0: rendered output is", "more than the 1000 allowed"},
		},
		{
			name: "undefined variable in a values file",
			helm: render.Helm{ValuesFiles: []render.ValuesFile{{Name: "values/prod.yaml", Data: []byte("host: ${cluster_name}.example.com\nregion: ${region}\n")}}},
			is:   render.ErrUndefinedVariable,
			want: []string{`render values/prod.yaml: undefined variable "region"`},
		},
		{
			name: "undefined variable in values",
			helm: render.Helm{Values: []byte(`{"zone": "${zone}"}`)},
			is:   render.ErrUndefinedVariable,
			want: []string{`render: helm values: undefined variable "zone"`},
		},
		{
			name: "values file that is not YAML",
			helm: render.Helm{ValuesFiles: []render.ValuesFile{{Name: "values/bad.yaml", Data: []byte("a: [1, 2\n")}}},
			want: []string{"render values/bad.yaml: failed to parse values/bad.yaml"},
		},
		{
			name: "bad --set",
			helm: render.Helm{Set: []string{"a.b[x]=1"}},
			want: []string{`render: --set "a.b[x]=1":`},
		},
		{
			name: "invalid release name",
			helm: render.Helm{ReleaseName: "Bad_Name"},
			want: []string{"chart tiny 0.1.0:", `release name "Bad_Name": invalid release name`},
		},
		{
			name: "invalid kube version",
			helm: render.Helm{KubeVersion: "one.two"},
			want: []string{`render app: kube version "one.two":`},
		},
		{
			name:  "chart's kubeVersion not met",
			files: map[string]string{"app/Chart.yaml": tinyChartYAML + "kubeVersion: '>=1.28.0-0'\n"},
			helm:  render.Helm{KubeVersion: "v1.27.3"},
			want:  []string{"chart tiny 0.1.0: chart requires kubeVersion: >=1.28.0-0 which is incompatible with Kubernetes v1.27.3"},
		},
		{
			name:  "values schema",
			files: map[string]string{"app/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}`},
			helm:  render.Helm{Set: []string{"replicas=0"}},
			want:  []string{"chart tiny 0.1.0:", "values don't meet the specifications of the schema"},
		},
		{
			name:  "library chart",
			files: map[string]string{"app/Chart.yaml": tinyChartYAML + "type: library\n"},
			want:  []string{"chart tiny 0.1.0: library charts are not installable"},
		},
		{
			name:  "Chart.yaml without a version",
			files: map[string]string{"app/Chart.yaml": "apiVersion: v2\nname: tiny\n"},
			want:  []string{"render app/Chart.yaml: load chart: validation: chart.metadata.version is required"},
		},
		{
			name:  "rendered object without a kind",
			files: map[string]string{"app/templates/nokind.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"},
			want:  []string{"render app/templates/nokind.yaml: rendered object: missing kind"},
		},
		{
			name:  "rendered object that is a list",
			files: map[string]string{"app/templates/list.yaml": "- a\n- b\n"},
			want:  []string{"render app: chart tiny 0.1.0: YAML parse error on tiny/templates/list.yaml"},
		},
		{
			name: "post-render patch that is not YAML",
			helm: render.Helm{PostRender: []render.Patch{{Name: "patches/bad.yaml", Patch: []byte("a: [b\n")}}},
			want: []string{"render app: post-render: patches/bad.yaml: yaml:"},
		},
		{
			name: "post-render patch kustomize refuses",
			helm: render.Helm{PostRender: []render.Patch{{Name: "patches/nothing.yaml", Patch: []byte("- op: replace\n  path: /data/x\n  value: y\n")}}},
			want: []string{"render app: post-render:", "patches/nothing.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeChartFiles(t, root, tinyChart(tc.files))
			if tc.setup != nil {
				tc.setup(t, root)
			}
			h := &tc.helm
			if tc.lim != nil {
				h = tc.lim(tc.helm)
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx(t)
			}
			objs, err := render.Render(ctx, render.Options{Root: root, Path: "app", Helm: h,
				Vars: map[string]string{"cluster_name": "edge-1"}})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if len(objs) != 1 || objs[0].GetName() != "release-name-config" {
					t.Fatalf("rendered %v, want the chart's ConfigMap", objs)
				}
				return
			}
			if err == nil {
				t.Fatalf("Render succeeded with %d objects, want an error", len(objs))
			}
			var re *render.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not *render.Error: %v", err, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error does not wrap %v: %v", tc.is, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestRenderChartStops: a render still running when its context ends returns at once with the
// context's error, and the render, which Helm cannot interrupt, finishes in the background.
// The render is held at its start (WithRenderStarted) while the context is cancelled, so the
// test does not depend on how long a template takes.
func TestRenderChartStops(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeChartFiles(t, root, tinyChart(nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	finished := make(chan struct{})
	h := render.WithRenderStarted(render.Helm{}, func() {
		cancel()
		<-release
		close(finished)
	})
	_, err := render.Render(ctx, render.Options{Root: root, Path: "app", Helm: h})
	var re *render.Error
	if !errors.As(err, &re) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Render = %v, want a *render.Error wrapping context.Canceled", err)
	}
	if want := "render app: chart tiny 0.1.0: rendering stopped: context canceled"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	close(release)
	<-finished

	// A render that is slow on purpose (a template looping ten million times) stops the
	// same way when its deadline passes.
	writeChartFiles(t, root, map[string]string{"app/templates/slow.yaml": "{{ range until 10000000 }}{{ end }}"})
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = render.Render(ctx, render.Options{Root: root, Path: "app"})
	if !errors.As(err, &re) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Render = %v, want a *render.Error wrapping context.DeadlineExceeded", err)
	}
}

// TestRenderChartDefaultLimits pins the bounds the agent renders with.
func TestRenderChartDefaultLimits(t *testing.T) {
	t.Parallel()
	l := render.DefaultHelmLimits
	if l.ChartBytes != 20<<20 || l.ChartFiles != 5000 || l.ValuesBytes != 4<<20 || l.OutputBytes != 64<<20 {
		t.Errorf("default limits = %+v, want 20 MiB and 5,000 files of chart, 4 MiB of values, 64 MiB of output", l)
	}
}

// TestRenderChartSymlinkInside: a symlink that stays inside the root is followed, as Helm
// follows it.
func TestRenderChartSymlinkInside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeChartFiles(t, root, tinyChart(nil))
	symlinkT(t, "../../shared/cm.yaml", filepath.Join(root, "app", "templates", "shared.yaml"))
	objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); got != "ConfigMap/release-name-config ConfigMap/shared" {
		t.Errorf("rendered %s", got)
	}
}

func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(out, " ")
}

func symlinkT(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFileT(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// bombArchive is a subchart archive holding n zero bytes: it compresses a thousandfold.
func bombArchive(t *testing.T, n int) []byte {
	t.Helper()
	data := chartArchive(t, "bomb", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: bomb\nversion: 1.0.0\n",
		"files/zeros": string(bytes.Repeat([]byte{0}, n)),
	})
	if len(data) > n/100 {
		t.Fatalf("archive is %d bytes, want it much smaller than %d", len(data), n)
	}
	return data
}
