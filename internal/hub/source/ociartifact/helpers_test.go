package ociartifact

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// fixture is a TLS registry, a cosign key pair named "release" the fetcher trusts, and a
// fetcher whose requests are counted.
type fixture struct {
	reg     *registrytest.Registry
	kp      ocitest.KeyPair
	key     Key
	f       *Fetcher
	counter *countingTransport
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{TLS: true})
	kp := ocitest.GenerateKeyPair(t)
	key, err := LoadKey("release", kp.Public)
	if err != nil {
		t.Fatal(err)
	}
	c := &countingTransport{base: reg.Client.Transport}
	opts.Transport = c
	if opts.Keys == nil {
		opts.Keys = map[string]Key{"release": key}
	}
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{reg: reg, kp: kp, key: key, f: f, counter: c}
}

// countingTransport counts blob downloads.
type countingTransport struct {
	base  http.RoundTripper
	mu    sync.Mutex
	blobs int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
		c.mu.Lock()
		c.blobs++
		c.mu.Unlock()
	}
	return c.base.RoundTrip(req)
}

func (c *countingTransport) blobGets() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.blobs
}

// ociSource is a Source named app for reg.Host/repo.
func ociSource(host, repo string, o v1alpha1.OCISource) v1alpha1.Source {
	o.URL = "oci://" + host + "/" + repo
	return v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "app"}, Spec: v1alpha1.SourceSpec{OCI: &o}}
}

func verifyWith(keys ...string) *v1alpha1.OCIVerify {
	return &v1alpha1.OCIVerify{Cosign: &v1alpha1.CosignVerify{PublicKeys: keys}}
}

// manifestDir writes a directory of manifests to push.
func manifestDir(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tree lists the files below dir with their content ("name: content").
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel)+": "+string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func emptyDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "dst")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
