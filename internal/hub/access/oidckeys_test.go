package access_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/access"
)

// keyIssuer is an OpenID issuer reduced to what verifying an ID token reads: discovery and
// the key set, whose reads it counts. Its keys can be rotated.
type keyIssuer struct {
	srv    *httptest.Server
	caFile string
	reads  atomic.Int32
	mu     sync.Mutex
	keys   []jose.JSONWebKey
	// hang, when set, holds each read of the keys until it is closed: a slow issuer.
	hang chan struct{}
}

func startKeyIssuer(t *testing.T) *keyIssuer {
	t.Helper()
	iss := &keyIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{ // an HTTP response: a failed write has nobody to tell
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys", "authorization_endpoint": iss.srv.URL + "/auth",
			"token_endpoint": iss.srv.URL + "/token", "id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		iss.reads.Add(1)
		iss.mu.Lock()
		hang, keys := iss.hang, slices.Clone(iss.keys)
		iss.mu.Unlock()
		if hang != nil {
			<-hang
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys}) // an HTTP response: a failed write has nobody to tell
	})
	iss.srv = httptest.NewTLSServer(mux)
	t.Cleanup(iss.srv.Close)
	iss.caFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(iss.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: iss.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return iss
}

// signer makes a key named kid; published says whether the issuer serves it.
func (iss *keyIssuer) signer(t *testing.T, kid string, published bool) jose.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if published {
		iss.mu.Lock()
		iss.keys = append(iss.keys, jose.JSONWebKey{Key: key.Public(), KeyID: kid, Algorithm: "ES256", Use: "sig"})
		iss.mu.Unlock()
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (iss *keyIssuer) token(t *testing.T, s jose.Signer, now time.Time) string {
	t.Helper()
	claims := struct {
		jwt.Claims
		Groups []string `json:"groups"`
	}{jwt.Claims{Issuer: iss.srv.URL, Subject: "alice", Audience: jwt.Audience{"flotilla"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}, []string{"sre"}}
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestOIDCKeyRefreshIsBounded: tokens signed with keys the issuer never published make the
// hub read the issuer's keys at most once per interval, however many arrive; a key the
// issuer rotated in is taken once the interval has passed.
func TestOIDCKeyRefreshIsBounded(t *testing.T) {
	t.Parallel()
	iss := startKeyIssuer(t)
	clk := clock.NewFake(time.Now())
	o, err := access.NewOIDC(access.OIDCOptions{Issuer: iss.srv.URL, ClientID: "flotilla", CAFile: iss.caFile,
		GroupRoles: []string{"sre=viewer"}, KeyRefreshInterval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k1 := iss.signer(t, "k1", true)
	p, err := o.Verify(ctx, iss.token(t, k1, clk.Now()))
	if err != nil || p.Actor != "oidc:alice" {
		t.Fatalf("a token of the issuer's key: %+v, %v", p, err)
	}
	if n := iss.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the issuer's keys for the first token, want 1", n)
	}

	for i := range 50 {
		forged := iss.token(t, iss.signer(t, fmt.Sprint("forged-", i), false), clk.Now())
		_, err := o.Verify(ctx, forged)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`key "forged-%d", not one of the issuer's keys`, i)) || !strings.Contains(err.Error(), "at most every 1m0s") {
			t.Fatalf("forged token %d: %v; want a refusal naming the key and the refresh bound", i, err)
		}
	}
	if n := iss.reads.Load(); n != 1 {
		t.Errorf("%d reads of the issuer's keys after 50 tokens of unknown keys within the interval, want still 1", n)
	}

	// The issuer rotates in k2: its tokens are refused until the interval has passed, then
	// one read takes the new key, and the next unknown key again waits for an interval.
	k2 := iss.signer(t, "k2", true)
	if _, err := o.Verify(ctx, iss.token(t, k2, clk.Now())); err == nil {
		t.Error("a token of a key rotated in a moment ago was taken without a read of the keys")
	}
	clk.Advance(time.Minute)
	if _, err := o.Verify(ctx, iss.token(t, k2, clk.Now())); err != nil {
		t.Errorf("a token of the rotated key after the interval: %v", err)
	}
	if _, err := o.Verify(ctx, iss.token(t, iss.signer(t, "forged-again", false), clk.Now())); err == nil {
		t.Error("a forged token was taken")
	}
	if n := iss.reads.Load(); n != 2 {
		t.Errorf("%d reads of the issuer's keys, want 2: the first token's and the rotation's", n)
	}
	// Known keys need no read at all.
	for range 5 {
		if _, err := o.Verify(ctx, iss.token(t, k1, clk.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if n := iss.reads.Load(); n != 2 {
		t.Errorf("%d reads after tokens of known keys, want 2", n)
	}

	// While a read of the keys hangs on a slow issuer, tokens of known keys are still
	// verified: only tokens of unknown keys wait for the read.
	hang := make(chan struct{})
	release := sync.OnceFunc(func() { close(hang) })
	t.Cleanup(release) // before the issuer's server closes, should the test fail with the read hanging
	iss.mu.Lock()
	iss.hang = hang
	iss.mu.Unlock()
	clk.Advance(time.Minute)
	forged := make(chan error, 1)
	go func() {
		_, err := o.Verify(ctx, iss.token(t, iss.signer(t, "forged-slow", false), clk.Now()))
		forged <- err
	}()
	eventually.Within(t, 20*time.Second, func() error {
		if n := iss.reads.Load(); n != 3 {
			return fmt.Errorf("%d reads of the keys, want 3 (the forged token's, hanging)", n)
		}
		return nil
	})
	known := make(chan error, 1)
	go func() {
		_, err := o.Verify(ctx, iss.token(t, k1, clk.Now()))
		known <- err
	}()
	select {
	case err := <-known:
		if err != nil {
			t.Errorf("a token of a known key during a slow read of the keys: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("a token of a known key waited for the slow read of the issuer's keys")
	}
	release()
	if err := <-forged; err == nil {
		t.Error("the forged token was taken after the slow read")
	}
}
