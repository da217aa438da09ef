package helmchart

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/registry"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// pushChart pushes a chart archive as `helm push` does, with the Helm SDK's registry client.
func pushChart(t testing.TB, reg *registrytest.Registry, user, pass, path string, data []byte, version string) {
	t.Helper()
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(reg.Client),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")),
	}
	if user != "" {
		opts = append(opts, registry.ClientOptBasicAuth(user, pass))
	}
	if reg.CAFile == "" {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(data, reg.Host+"/"+path+":"+version); err != nil {
		t.Fatalf("push %s %s: %v", path, version, err)
	}
}

// recorder records the paths of requests to a registry.
type recorder struct {
	base  http.RoundTripper
	mu    sync.Mutex
	paths []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.paths
	r.paths = nil
	return out
}

// TestOCIChart: charts pushed as `helm push` does are found by semver over the tags ("_"
// standing for "+"), the revision's digest is the chart layer's, credentials are needed and
// sent, and an unchanged revision downloads no chart.
func TestOCIChart(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{TLS: true, Users: map[string]string{"deploy": "s3cret"}})
	archives := map[string][]byte{}
	for _, v := range []string{"1.0.0", "1.4.0", "1.4.1+build.7", "2.0.0-beta.1"} {
		archives[v] = packageChart(t, newChart("podinfo", v, 2))
		pushChart(t, reg, "deploy", "s3cret", "charts/podinfo", archives[v], v)
	}
	rec := &recorder{base: reg.Client.Transport}
	f := New(Options{Transport: rec, Policy: policy(t, "username: deploy\npassword: s3cret\n", reg.Host)})
	withCreds := func(h *v1alpha1.HelmSource) { h.Credentials = "charts" }
	repoURL := "oci://" + reg.Host + "/charts"

	for _, tc := range []struct{ version, want string }{
		{"", "1.4.1+build.7"},
		{"~1.4.0", "1.4.1+build.7"},
		{"1.0.0", "1.0.0"},
		{">=2.0.0-0", "2.0.0-beta.1"},
	} {
		dst := t.TempDir()
		got, err := f.Fetch(t.Context(), helmSource(repoURL, "podinfo", tc.version, withCreds), "", dst)
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		if want := tc.want + "@sha256:" + hexSum(archives[tc.want]); got.Revision != want || got.URL != repoURL+" chart podinfo" {
			t.Fatalf("%q: fetched %+v, want revision %s", tc.version, got, want)
		}
		raw, err := os.ReadFile(filepath.Join(dst, "Chart.yaml"))
		if err != nil || !strings.Contains(string(raw), "version: "+tc.want+"\n") {
			t.Fatalf("%q: Chart.yaml %s (%v), want version %s", tc.version, raw, err, tc.want)
		}
	}

	rec.take()
	prev := "1.4.1+build.7@sha256:" + hexSum(archives["1.4.1+build.7"])
	dst := t.TempDir()
	got, err := f.Fetch(t.Context(), helmSource(repoURL, "podinfo", "", withCreds), prev, dst)
	if err != nil || !got.Unchanged || got.Revision != prev {
		t.Fatalf("unchanged fetch: %+v, %v", got, err)
	}
	for _, p := range rec.take() {
		if strings.Contains(p, "/blobs/") {
			t.Errorf("unchanged fetch requested %s", p)
		}
	}
	if files := listFiles(t, dst); len(files) != 0 {
		t.Fatalf("unchanged fetch wrote %v", files)
	}

	_, err = f.Fetch(t.Context(), helmSource(repoURL, "podinfo", ""), "", t.TempDir())
	if want := "source 'charts': helm repository " + repoURL + " chart podinfo version newest: list the tags of oci://" + reg.Host + "/charts/podinfo: "; err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("anonymous: error %v\nwant %s...UNAUTHORIZED", err, want)
	}
}

// TestOCINotAChart: an OCI artifact that is not a Helm chart is refused.
func TestOCINotAChart(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{TLS: true})
	pushChart(t, reg, "", "", "charts/podinfo", packageChart(t, newChart("podinfo", "1.0.0", 1)), "1.0.0")
	f := New(Options{Transport: reg.Client.Transport})
	_, err := f.Fetch(t.Context(), helmSource("oci://"+reg.Host+"/charts", "web", ""), "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "list the tags of oci://"+reg.Host+"/charts/web") {
		t.Fatalf("missing chart: %v", err)
	}
	_, err = New(Options{Transport: reg.Client.Transport, MaxChartBytes: 100}).Fetch(t.Context(), helmSource("oci://"+reg.Host+"/charts", "podinfo", ""), "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "bytes, larger than the limit of 100 bytes") {
		t.Fatalf("large chart: %v", err)
	}
}

// TestOCIPlainHTTP: a registry on plain HTTP is refused unless the source says insecure, even
// on a loopback address, where the registry client would try plain HTTP by itself.
func TestOCIPlainHTTP(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{})
	pushChart(t, reg, "", "", "charts/podinfo", packageChart(t, newChart("podinfo", "1.0.0", 1)), "1.0.0")
	src := helmSource("oci://"+reg.Host+"/charts", "podinfo", "")
	_, err := New(Options{}).Fetch(t.Context(), src, "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "plain HTTP refused: set insecure: true on the source to accept it") {
		t.Fatalf("error %v, want plain HTTP refused", err)
	}
	src.Spec.Helm.Insecure = true
	got, err := New(Options{}).Fetch(t.Context(), src, "", t.TempDir())
	if err != nil || !strings.HasPrefix(got.Revision, "1.0.0@sha256:") {
		t.Fatalf("insecure: %+v, %v", got, err)
	}
}
