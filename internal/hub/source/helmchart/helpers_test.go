package helmchart

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source"
)

// newChart builds a chart as a chart author would: n ConfigMap templates reading .Values,
// apiVersion v2, and when deps are given, their ranges in Chart.yaml and the locked versions
// in Chart.lock.
func newChart(name, version string, n int, deps ...*chart.Dependency) *chart.Chart {
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"},
		Values:   map[string]any{"greeting": "hello from " + name},
	}
	c.Raw = append(c.Raw, &chart.File{Name: "values.yaml", Data: []byte("greeting: hello from " + name + "\n")})
	for i := range n {
		c.Templates = append(c.Templates, &chart.File{
			Name: fmt.Sprintf("templates/cm-%d.yaml", i),
			Data: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-%s-%d\ndata:\n  greeting: {{ .Values.greeting | quote }}\n", name, i),
		})
	}
	if len(deps) > 0 {
		c.Metadata.Dependencies = deps
		locked := make([]*chart.Dependency, len(deps))
		for i, d := range deps {
			locked[i] = &chart.Dependency{Name: d.Name, Version: d.Version, Repository: d.Repository}
		}
		c.Lock = &chart.Lock{Generated: time.Unix(0, 0).UTC(), Digest: "sha256:0", Dependencies: locked}
	}
	return c
}

// packageChart writes the chart's archive as `helm package` does (chartutil.Save).
func packageChart(t testing.TB, c *chart.Chart) []byte {
	t.Helper()
	file, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func hexSum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// chartRepo is a chart repository: an index.yaml and archives over HTTPS (or HTTP), with
// optional basic auth, an ETag on the index, and a record of every request.
type chartRepo struct {
	srv *httptest.Server
	URL string

	mu         sync.Mutex
	index      *repo.IndexFile
	files      map[string][]byte
	user, pass string
	// rawIndex, when set, is served instead of the index.
	rawIndex []byte
	// redirects send a path elsewhere (302).
	redirects map[string]string
	requests  []request
}

type request struct {
	path, auth string
	status     int
}

func startRepo(t testing.TB, tlsOn bool, user, pass string) *chartRepo {
	t.Helper()
	r := &chartRepo{index: repo.NewIndexFile(), files: map[string][]byte{}, user: user, pass: pass}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if tlsOn {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL
	return r
}

func (r *chartRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := request{path: req.URL.Path, auth: req.Header.Get("Authorization")}
	status := func() int {
		if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return http.StatusUnauthorized
			}
		}
		var body []byte
		if to, ok := r.redirects[req.URL.Path]; ok {
			http.Redirect(w, req, to, http.StatusFound)
			return http.StatusFound
		}
		if strings.HasSuffix(req.URL.Path, "/index.yaml") {
			body = r.rawIndex
			if body == nil {
				var err error
				if body, err = yaml.Marshal(r.index); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return http.StatusInternalServerError
				}
			}
			etag := `"` + hexSum(body) + `"`
			w.Header().Set("ETag", etag)
			if req.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return http.StatusNotModified
			}
		} else {
			var ok bool
			if body, ok = r.files[req.URL.Path]; !ok {
				http.NotFound(w, req)
				return http.StatusNotFound
			}
		}
		_, _ = w.Write(body) // an HTTP response: a failed write has nobody to tell
		return http.StatusOK
	}()
	rec.status = status
	r.requests = append(r.requests, rec)
}

// add publishes a chart archive at /charts/<name>-<version>.tgz under a relative URL, with its
// digest in the index unless digest is "-" (none) or another value to state.
func (r *chartRepo) add(t testing.TB, c *chart.Chart, digest string) []byte {
	t.Helper()
	data := packageChart(t, c)
	r.addArchive(t, c.Metadata, data, "charts/"+c.Metadata.Name+"-"+c.Metadata.Version+".tgz", digest)
	return data
}

// addArchive publishes data as md's archive at url (relative to the repository, or absolute).
func (r *chartRepo) addArchive(t testing.TB, md *chart.Metadata, data []byte, url, digest string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch digest {
	case "":
		digest = hexSum(data)
	case "-":
		digest = ""
	}
	if !strings.Contains(url, "://") {
		r.files["/"+url] = data
	}
	mdCopy := *md
	if err := r.index.MustAdd(&mdCopy, url, "", digest); err != nil {
		t.Fatal(err)
	}
	// MustAdd takes the file name only when given a base URL: keep the path as written.
	entries := r.index.Entries[md.Name]
	entries[len(entries)-1].URLs = []string{url}
}

// take returns the requests recorded since the last call.
func (r *chartRepo) take() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// testTLS trusts the certificate httptest's TLS servers share.
func testTLS(t testing.TB, r *chartRepo) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(r.srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

// policy is an operator's credentials configuration with one credential, "charts", for hosts.
func policy(t testing.TB, creds string, hosts ...string) *source.Policy {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "charts.creds"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "credentials:\n  charts:\n    file: charts.creds\n    hosts: [" + strings.Join(hosts, ", ") + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "credentials.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := source.LoadPolicy(filepath.Join(dir, "credentials.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func helmSource(repository, chartName, version string, mod ...func(*v1alpha1.HelmSource)) v1alpha1.Source {
	h := &v1alpha1.HelmSource{Repository: repository, Chart: chartName, Version: version}
	for _, m := range mod {
		m(h)
	}
	return v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "charts"}, Spec: v1alpha1.SourceSpec{Helm: h}}
}

// hostOf is host:port of a server URL.
func hostOf(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://") }

// listFiles lists the files under dir, slash-separated.
func listFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
