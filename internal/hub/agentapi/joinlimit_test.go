package agentapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// joinHub is the agent endpoint of a hub with a real SQLite store and CA, served over TLS
// on 127.0.0.1, with the default join limits (1 a second and a burst of 20 per address) and
// a fake clock, so that no bucket refills unless the test moves it.
type joinHub struct {
	t      *testing.T
	store  store.Store
	ca     *pki.CA
	clock  *clock.Fake
	client agentv1connect.JoinServiceClient
}

func newJoinHub(t *testing.T) *joinHub {
	t.Helper()
	h := &joinHub{t: t, store: stores[0].open(t), clock: clock.NewFake(time.Now())}
	t.Cleanup(func() { h.store.Close() })
	var err error
	if h.ca, err = pki.LoadOrCreateCA(t.TempDir(), time.Now()); err != nil {
		t.Fatal(err)
	}
	s := New(Deps{Store: h.store, CA: h.ca, Seen: NewLastSeen(nil, nil, nil), Metrics: NewMetrics(), Clock: h.clock}, Options{CertTTL: time.Hour})
	srv := httptest.NewUnstartedServer(s.Handler())
	cert, err := h.ca.ServingCertificate([]string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = s.TLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: h.ca.Pool()}}}
	h.client = agentv1connect.NewJoinServiceClient(hc, srv.URL)
	return h
}

// token registers cluster and returns a join token for it.
func (h *joinHub) token(cluster string) string {
	h.t.Helper()
	if err := h.store.AddCluster(h.t.Context(), store.Cluster{Name: cluster}); err != nil {
		h.t.Fatal(err)
	}
	tok, err := pki.NewJoinToken(cluster, h.ca.Fingerprint())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.store.CreateJoinToken(h.t.Context(), store.JoinToken{ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret), Cluster: cluster, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		h.t.Fatal(err)
	}
	return tok.Encode()
}

// join joins with token and a fresh key.
func (h *joinHub) join(token, cluster string) error {
	key, err := pki.NewAgentKey()
	if err != nil {
		return err
	}
	csr, err := pki.CreateCSR(key, cluster)
	if err != nil {
		return err
	}
	_, err = h.client.Join(h.t.Context(), connect.NewRequest(&agentv1.JoinRequest{Token: token, CsrPem: csr}))
	return err
}

// TestJoinStormFromOneAddress: 100 agents joining at once from one address with valid tokens
// all join, with the default per-address limit of 20 at once: only failed joins spend the
// address's bucket, and the others wait their turn in the join queue.
func TestJoinStormFromOneAddress(t *testing.T) {
	t.Parallel()
	h := newJoinHub(t)
	const n = 100
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = h.token(fmt.Sprintf("edge-%03d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = h.join(tokens[i], fmt.Sprintf("edge-%03d", i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("join %d of %d from one address: %v", i+1, n, err)
		}
	}
}

// TestJoinFloodOfBadTokensRefused: an address that spent its bucket on failed joins is
// refused, good token or not, until the bucket refills; a failure caused by the store
// would not count, a success never does.
func TestJoinFloodOfBadTokensRefused(t *testing.T) {
	t.Parallel()
	h := newJoinHub(t)
	good := h.token("edge-1")
	for i := range 20 {
		if err := h.join("flt1.not-a-token", "edge-1"); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("bad join %d within the burst: %v; want invalid_argument (the token is bad)", i+1, err)
		}
	}
	err := h.join(good, "edge-1")
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("join after 20 failures: %v; want resource_exhausted", err)
	}
	if want := "join from 127.0.0.1: too many failed attempts from this address; retry in"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q; want it to say %q", err, want)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%v: not a Connect error", err)
	}
	if ra := ce.Meta().Get("Retry-After"); ra != "1" && ra != "2" {
		t.Errorf("Retry-After %q; want 1 or 2 (a token refills in a second)", ra)
	}
	// A used token fails too: it is charged like a bad one once the address may try again.
	h.clock.Advance(time.Second)
	if err := h.join(good, "edge-1"); err != nil {
		t.Fatalf("join with a good token once a token refilled: %v", err)
	}
	if err := h.join(good, "edge-1"); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("join with the used token: %v; want permission_denied", err)
	}
	if err := h.join(h.token("edge-2"), "edge-2"); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("join after the used token's failure: %v; want resource_exhausted (the bucket is spent again)", err)
	}
}
