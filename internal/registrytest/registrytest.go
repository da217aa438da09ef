// Package registrytest runs a real OCI registry for tests: the CNCF distribution registry
// (the reference implementation behind Docker Hub and most self-hosted registries), in
// process, with its in-memory storage, on a loopback port, over plain HTTP or TLS.
//
// Only tests import it: the flotilla binary does not link the registry.
package registrytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd" // the "htpasswd" access controller
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the "inmemory" storage driver
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
)

// Options says how the registry listens.
type Options struct {
	// TLS serves HTTPS with a certificate for 127.0.0.1 that only Registry.Client and the
	// bundle at Registry.CAFile trust.
	TLS bool
	// Users, when set, are the only ones let in (user name to password, HTTP basic
	// authentication as with an htpasswd file); without them anyone may push and pull.
	Users map[string]string
}

// Registry is a running registry.
type Registry struct {
	// Host is host:port, the registry part of an image reference (Host + "/team/app:v1").
	Host string
	// URL is the base URL (http:// or https://).
	URL string
	// Client trusts the registry's certificate (when TLS).
	Client *http.Client
	// CAFile is a PEM file of the certificate the registry serves (empty without TLS), for
	// processes started by the test (SSL_CERT_FILE).
	CAFile string
}

var quietOnce sync.Once

// Start runs a registry until the test ends.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	// The registry logs through logrus's standard logger, which nothing outside its internal
	// packages can replace per instance: quiet it for the whole test process. Failures reach
	// the test as HTTP errors from the client anyway.
	quietOnce.Do(func() { logrus.SetOutput(io.Discard) })

	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{
		"inmemory": configuration.Parameters{},
		// No background purge of unfinished uploads: it would outlive the test.
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
	}
	cfg.HTTP.Secret = hex.EncodeToString(secret)
	cfg.Log.AccessLog.Disabled = true
	if len(opts.Users) > 0 {
		var htpasswd []byte
		for user, password := range opts.Users {
			// The lowest cost bcrypt takes: the test is not defending the hashes.
			hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			htpasswd = append(htpasswd, user+":"+string(hash)+"\n"...)
		}
		file := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(file, htpasswd, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "registrytest", "path": file}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	app := handlers.NewApp(ctx, cfg)
	srv := httptest.NewUnstartedServer(app)
	r := &Registry{}
	if opts.TLS {
		srv.StartTLS()
		r.CAFile = filepath.Join(t.TempDir(), "registry-ca.pem")
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(r.CAFile, pemBytes, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		srv.Start()
	}
	t.Cleanup(func() {
		srv.Close()
		_ = app.Shutdown() // test cleanup: the registry is discarded
		cancel()
	})
	r.URL = srv.URL
	r.Host = srv.Listener.Addr().String()
	r.Client = srv.Client()
	return r
}
