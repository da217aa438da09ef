package ociartifact

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
	"github.com/flotilla/flotilla/internal/registrytest"
)

// TestPlainHTTPNeedsInsecure: a registry that speaks only plain HTTP is refused unless the
// source says insecure, even on a loopback address (where go-containerregistry would fall
// back to http:// on its own).
func TestPlainHTTPNeedsInsecure(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{})
	ocitest.PushFlux(t, reg, "team/app", "v1", map[string]string{"deploy.yaml": deployment}, ocitest.Push{})
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Fetch(t.Context(), ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1"}), "", emptyDir(t))
	wantError(t, err, "source 'app'", "plain HTTP refused", "set insecure: true on the source")

	dst := emptyDir(t)
	if _, err := f.Fetch(t.Context(), ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1", Insecure: true}), "", dst); err != nil {
		t.Fatalf("with insecure: %v", err)
	}
	if files := tree(t, dst); len(files) != 1 {
		t.Errorf("with insecure: unpacked %v", files)
	}
}

// policy writes a credentials configuration naming one credential for hosts.
func policy(t *testing.T, hosts string) *source.Policy {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ci.creds"), []byte("username: ci\npassword: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "credentials.yaml")
	if err := os.WriteFile(cfg, []byte("credentials:\n  ci:\n    file: ci.creds\n    hosts: ["+hosts+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := source.LoadPolicy(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCredentials: named credentials reach the registry they are for, and no other host:
// not a registry the source names, nor a token service a registry names.
func TestCredentials(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t, registrytest.Options{TLS: true, Users: map[string]string{"ci": "s3cret"}})
	ocitest.PushFlux(t, reg, "team/app", "v1", map[string]string{"deploy.yaml": deployment}, ocitest.Push{Credential: auth.Credential{Username: "ci", Password: "s3cret"}})

	t.Run("to the registry they are for", func(t *testing.T) {
		f, _ := New(Options{Policy: policy(t, reg.Host), Transport: reg.Client.Transport})
		if _, err := f.Fetch(t.Context(), ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1", Credentials: "ci"}), "", emptyDir(t)); err != nil {
			t.Fatal(err)
		}
		// Without them the registry refuses: the credentials were what let the hub in.
		_, err := f.Fetch(t.Context(), ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1"}), "", emptyDir(t))
		wantError(t, err, "401 Unauthorized")
	})
	t.Run("not to a registry they are not for", func(t *testing.T) {
		f, _ := New(Options{Policy: policy(t, "registry.example.com"), Transport: reg.Client.Transport})
		_, err := f.Fetch(t.Context(), ociSource(reg.Host, "team/app", v1alpha1.OCISource{Tag: "v1", Credentials: "ci"}), "", emptyDir(t))
		wantError(t, err, "source 'app'", "credentials 'ci' may be sent to registry.example.com only, not to "+reg.Host)
	})
	t.Run("not to the token service a registry names", func(t *testing.T) {
		// A registry the credentials are for answers with a token service on another host:
		// go-containerregistry would send the credentials there. (By name: it refuses a
		// token service at a private IP address itself.)
		var mu sync.Mutex
		var leaked []string
		tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			leaked = append(leaked, r.Header.Get("Authorization"))
			mu.Unlock()
			fmt.Fprint(w, `{"token": "t"}`)
		}))
		defer tokens.Close()
		tokenHost := "localhost:" + strings.TrimPrefix(tokens.Listener.Addr().String(), "127.0.0.1:")
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="evil"`, tokenHost))
			w.WriteHeader(http.StatusUnauthorized)
		}))
		defer evil.Close()
		evilHost := evil.Listener.Addr().String()
		f, _ := New(Options{Policy: policy(t, evilHost)})
		_, err := f.Fetch(t.Context(), ociSource(evilHost, "team/app", v1alpha1.OCISource{Tag: "v1", Credentials: "ci", Insecure: true}), "", emptyDir(t))
		wantError(t, err, "source 'app'", evilHost+" sent the hub to "+tokenHost+" for a token", "credentials 'ci' may be sent to "+evilHost+" only")
		mu.Lock()
		defer mu.Unlock()
		for _, a := range leaked {
			if a != "" {
				t.Errorf("the token service got Authorization %q", a)
			}
		}
	})
}
