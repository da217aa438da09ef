package agent

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/render"
)

// helmAgent is an agent with a state dir and the package's cluster, enough for helmOptions;
// artifacts are put in its cache directly.
func helmAgent(t *testing.T, cfg *rest.Config) *Agent {
	t.Helper()
	st, err := openState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close() })
	return &Agent{st: st, clock: clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), opts: Options{RESTConfig: cfg}}
}

// putArtifact writes files as the unpacked artifact of digest sha256:<hex of c repeated>.
func putArtifact(t *testing.T, a *Agent, c byte, files map[string]string) string {
	t.Helper()
	hex := strings.Repeat(string(c), 64)
	for name, content := range files {
		p := filepath.Join(a.st.artifactDir(), hex, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(a.st.artifactDir(), hex), 0o755); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex
}

// TestHelmOptions: what the agent passes the renderer for an assignment: the release and
// namespace, the cluster's real version and API versions, values and patch files read from
// the artifacts of the sources they name; no Helm options for a directory that is no chart.
func TestHelmOptions(t *testing.T) {
	t.Parallel()
	a := helmAgent(t, testCluster(t).RESTConfig())
	chart := putArtifact(t, a, 'a', map[string]string{
		"charts/web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"plain/settings.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n",
		"patches/label.yaml":     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {team: a}}\n",
		"big/values.yaml":        strings.Repeat("a", render.MaxHelmFileBytes+1),
		"charts/web/values.yaml": "replicas: 1\n",
	})
	config := putArtifact(t, a, 'b', map[string]string{"values/prod.yaml": "replicas: 3\nregion: ${cluster_label_region}\n"})
	if err := os.Symlink("/etc/passwd", filepath.Join(a.st.artifactDir(), strings.Repeat("b", 64), "values", "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	valuesFile := func(path string) desired.FileRef {
		return desired.FileRef{Source: "config", Revision: "main@sha1:1234", Digest: config, Path: path}
	}

	t.Run("a chart without Helm settings gets the release, namespace and capabilities", func(t *testing.T) {
		h, err := a.helmOptions(t.Context(), &desired.Assignment{Release: "web", Namespace: "shop", Digest: chart, Path: "charts/web"})
		if err != nil {
			t.Fatal(err)
		}
		if h == nil || h.ReleaseName != "web" || h.Namespace != "shop" || !h.IncludeCRDs {
			t.Fatalf("helm options = %+v, want release web in namespace shop with CRDs", h)
		}
		if !strings.HasPrefix(h.KubeVersion, "v1.") {
			t.Errorf("KubeVersion = %q, want the API server's (v1.x)", h.KubeVersion)
		}
		for _, want := range []string{"v1", "apps/v1", "apps/v1/Deployment", "batch/v1/Job", "apiextensions.k8s.io/v1/CustomResourceDefinition"} {
			if !slices.Contains(h.APIVersions, want) {
				t.Errorf("APIVersions lacks %q (%d entries)", want, len(h.APIVersions))
			}
		}
	})

	t.Run("a directory that is no chart gets none", func(t *testing.T) {
		h, err := a.helmOptions(t.Context(), &desired.Assignment{Release: "web", Digest: chart, Path: "plain"})
		if err != nil || h != nil {
			t.Errorf("helm options = %+v, %v; want none", h, err)
		}
	})

	t.Run("Helm settings", func(t *testing.T) {
		as := &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{
			ReleaseName: "shop-web", IncludeCRDs: false, Values: map[string]any{"replicas": json.Number("5")},
			ValuesFiles: []desired.FileRef{valuesFile("values/prod.yaml")},
			PostRender: []desired.PostRenderPatch{
				{Patch: "- op: add\n  path: /metadata/labels/x\n  value: y\n", Target: &v1alpha1.PatchTarget{Kind: "Deployment", Name: "web"}},
				{File: &desired.FileRef{Source: "apps", Revision: "main@sha1:abcd", Digest: chart, Path: "patches/label.yaml"}},
			},
		}}
		h, err := a.helmOptions(t.Context(), as)
		if err != nil {
			t.Fatal(err)
		}
		h.KubeVersion, h.APIVersions = "", nil
		want := &render.Helm{
			ReleaseName: "shop-web", Namespace: "default", IncludeCRDs: false, Values: []byte(`{"replicas":5}`),
			ValuesFiles: []render.ValuesFile{{Name: "config:values/prod.yaml", Data: []byte("replicas: 3\nregion: ${cluster_label_region}\n")}},
			PostRender: []render.Patch{
				{Name: "postRender patch 1", Patch: []byte("- op: add\n  path: /metadata/labels/x\n  value: y\n"), Target: &render.PatchTarget{Kind: "Deployment", Name: "web"}},
				{Name: "apps:patches/label.yaml", Patch: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {team: a}}\n")},
			},
		}
		if d := cmp.Diff(want, h, cmp.AllowUnexported(render.Helm{})); d != "" {
			t.Errorf("helm options (-want +got):\n%s", d)
		}
	})

	for _, tc := range []struct {
		name    string
		as      *desired.Assignment
		wantErr string
	}{
		{
			name:    "Helm settings on a directory that is no chart",
			as:      &desired.Assignment{Release: "web", Revision: "main@sha1:abcd", Digest: chart, Path: "plain", Helm: &desired.Helm{}},
			wantErr: `release "web" has Helm settings but its path "plain" at revision main@sha1:abcd is not a chart (it holds no Chart.yaml)`,
		},
		{
			name:    "a values file outside its source",
			as:      &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{ValuesFiles: []desired.FileRef{valuesFile("../" + strings.Repeat("a", 64) + "/charts/web/values.yaml")}}},
			wantErr: `values file "../aaaa`,
		},
		{
			name:    "a values file linking outside its source",
			as:      &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{ValuesFiles: []desired.FileRef{valuesFile("values/escape.yaml")}}},
			wantErr: `values file "values/escape.yaml" of source "config" at revision main@sha1:1234: openat values/escape.yaml: path escapes from parent`,
		},
		{
			name:    "a missing values file",
			as:      &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{ValuesFiles: []desired.FileRef{valuesFile("values/staging.yaml")}}},
			wantErr: `values file "values/staging.yaml" of source "config" at revision main@sha1:1234: no such file in the source`,
		},
		{
			name: "a values file over the limit",
			as: &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{ValuesFiles: []desired.FileRef{
				{Source: "apps", Revision: "r1", Digest: chart, Path: "big/values.yaml"}}}},
			wantErr: `values file "big/values.yaml" of source "apps" at revision r1: larger than the limit of 4194304 bytes`,
		},
		{
			name: "a patch file that is a directory",
			as: &desired.Assignment{Release: "web", Digest: chart, Path: "charts/web", Helm: &desired.Helm{PostRender: []desired.PostRenderPatch{
				{File: &desired.FileRef{Source: "apps", Revision: "r1", Digest: chart, Path: "patches"}}}}},
			wantErr: `postRender patch file "patches" of source "apps" at revision r1: not a regular file`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.helmOptions(t.Context(), tc.as)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// countingConfig counts the requests for the server version: one per discovery.
func countingConfig(cfg *rest.Config, n *atomic.Int64) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/version" {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCapabilitiesCache: the cluster's capabilities are read once, again after ten minutes on
// the agent's clock, and again after a chart failed, but not more than every 30 seconds.
func TestCapabilitiesCache(t *testing.T) {
	t.Parallel()
	var discoveries atomic.Int64
	cfg := countingConfig(testCluster(t).RESTConfig(), &discoveries)
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	var c capabilityCache
	for _, step := range []struct {
		name       string
		advance    time.Duration
		invalidate bool
		want       int64
	}{
		{name: "first render reads them", want: 1},
		{name: "the next one uses them", advance: time.Minute, want: 1},
		{name: "ten minutes later they are read again", advance: 9 * time.Minute, want: 2},
		{name: "a failure right after does not read them", advance: 10 * time.Second, invalidate: true, want: 2},
		{name: "a failure 30s after they were read does", advance: 20 * time.Second, invalidate: true, want: 3},
		{name: "and the next render uses those", advance: time.Second, want: 3},
	} {
		clk.Advance(step.advance)
		if step.invalidate {
			c.invalidate()
		}
		caps, err := c.get(t.Context(), clk, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := discoveries.Load(); got != step.want || caps.kubeVersion == "" {
			t.Fatalf("%s: %d discoveries (version %q), want %d", step.name, got, caps.kubeVersion, step.want)
		}
	}

	t.Run("a simulated cluster has Helm's defaults", func(t *testing.T) {
		var c capabilityCache
		caps, err := c.get(t.Context(), clk, nil)
		if err != nil || caps.kubeVersion != "" || caps.apiVersions != nil {
			t.Errorf("capabilities = %+v, %v; want none", caps, err)
		}
	})

	t.Run("an unreachable cluster is an error naming the request", func(t *testing.T) {
		var c capabilityCache
		bad := rest.CopyConfig(testCluster(t).RESTConfig())
		bad.Host = "https://127.0.0.1:1"
		_, err := c.get(t.Context(), clk, bad)
		if err == nil || !strings.Contains(err.Error(), "server version") {
			t.Errorf("error = %v, want one about the server version", err)
		}
	})
}
