package registrytest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushPullByDigest pushes an image over plain HTTP and over TLS and reads it back by
// digest: what a test of OCI sources or of flotilla's image relies on.
func TestPushPullByDigest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"tls", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := Start(t, Options{TLS: tc.tls})
			if tc.tls != strings.HasPrefix(reg.URL, "https://") || (reg.CAFile != "") != tc.tls {
				t.Fatalf("TLS %v: URL %s, CA file %q", tc.tls, reg.URL, reg.CAFile)
			}
			img, err := random.Image(2048, 2)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := name.ParseReference(reg.Host + "/team/app:v1")
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(ref, img, remote.WithTransport(reg.Client.Transport), remote.WithContext(t.Context())); err != nil {
				t.Fatalf("push %s: %v", ref, err)
			}
			want, _ := img.Digest()
			byDigest, err := name.NewDigest(reg.Host + "/team/app@" + want.String())
			if err != nil {
				t.Fatal(err)
			}
			got, err := remote.Image(byDigest, remote.WithTransport(reg.Client.Transport), remote.WithContext(t.Context()))
			if err != nil {
				t.Fatalf("pull %s: %v", byDigest, err)
			}
			layers, err := got.Layers()
			if err != nil || len(layers) != 2 {
				t.Fatalf("pulled image: %d layers, %v; want 2", len(layers), err)
			}
			if d, _ := got.Digest(); d != want {
				t.Errorf("pulled digest %s, pushed %s", d, want)
			}
			// An unknown tag is the registry's "manifest unknown", not an empty image.
			missing, _ := name.ParseReference(reg.Host + "/team/app:v2")
			if _, err := remote.Image(missing, remote.WithTransport(reg.Client.Transport)); err == nil || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") {
				t.Errorf("pull of a tag never pushed: %v, want MANIFEST_UNKNOWN", err)
			}
		})
	}
}

// TestTLSRefusesUntrustedClient checks the TLS registry serves a certificate only its own
// client trusts: a test that forgets to pass the CA fails instead of silently using HTTP.
func TestTLSRefusesUntrustedClient(t *testing.T) {
	t.Parallel()
	reg := Start(t, Options{TLS: true})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, reg.URL+"/v2/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET /v2/ with the default client succeeded; want a certificate error")
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("GET /v2/ with the default client: %v, want a certificate error", err)
	}
	resp, err = reg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/: %s, want 200", resp.Status)
	}
}

// TestUsers checks that a registry with users refuses an anonymous push and a wrong password,
// and takes the right one.
func TestUsers(t *testing.T) {
	t.Parallel()
	reg := Start(t, Options{TLS: true, Users: map[string]string{"ci": "s3cret"}})
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(reg.Host + "/team/app:v1")
	for _, tc := range []struct {
		name string
		auth authn.Authenticator
		want string
	}{
		{"anonymous", authn.Anonymous, "401 Unauthorized"},
		{"wrong password", &authn.Basic{Username: "ci", Password: "guess"}, "401 Unauthorized"},
		{"right password", &authn.Basic{Username: "ci", Password: "s3cret"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := remote.Write(ref, img, remote.WithTransport(reg.Client.Transport), remote.WithAuth(tc.auth), remote.WithContext(t.Context()))
			if tc.want == "" && err != nil {
				t.Fatalf("push as ci: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("push: %v, want %s", err, tc.want)
			}
		})
	}
}
