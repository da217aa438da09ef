package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// join exchanges the token and a fresh key for a certificate. Before it has the hub's CA the
// agent trusts only a server whose CA matches the fingerprint pinned in the token, so a
// man in the middle cannot take the token.
// ageRecipient is the cluster's age recipient ("" for programs that only speak the protocol).
func join(ctx context.Context, hubURL, rawToken, version, ageRecipient string) (*identity, error) {
	tok, err := pki.ParseJoinToken(rawToken)
	if err != nil {
		return nil, err
	}
	key, err := pki.NewAgentKey()
	if err != nil {
		return nil, err
	}
	csr, err := pki.CreateCSR(key, tok.Cluster)
	if err != nil {
		return nil, err
	}
	pinned := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12,
				// Verification is not skipped: VerifyPeerCertificate checks the chain against
				// the CA pinned in the token instead of the system roots.
				InsecureSkipVerify:    true, //nolint:gosec
				VerifyPeerCertificate: pki.PinnedVerifier(tok.CAFingerprint),
			},
		},
	}
	// The agent's own client takes over after the join: this connection would otherwise stay
	// open, idle, for the life of the process, at both ends.
	defer pinned.CloseIdleConnections()
	c := agentv1connect.NewJoinServiceClient(pinned, hubURL)
	resp, err := c.Join(ctx, connect.NewRequest(&agentv1.JoinRequest{Token: rawToken, CsrPem: csr, AgentVersion: version, AgeRecipient: ageRecipient}))
	if err != nil {
		return nil, fmt.Errorf("join %s as cluster %q: %w", hubURL, tok.Cluster, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &identity{
		NextReportSeq: resp.Msg.GetNextReportSeq(),
		Cluster:       resp.Msg.GetCluster(),
		HubURL:        hubURL,
		KeyPEM:        keyPEM,
		CertPEM:       resp.Msg.GetCertificatePem(),
		CAPEM:         resp.Msg.GetCaPem(),
	}, nil
}

// joinWhenLetIn joins, waiting out the hub's Retry-After for as long as the hub says it is
// busy (its join queue full, or the join's turn not come within the hub's hold): thousands of
// agents starting at once all join in the end. Any other failure ends the join.
func (a *Agent) joinWhenLetIn(ctx context.Context) (*identity, error) {
	for {
		id, err := join(ctx, a.opts.HubURL, a.opts.JoinToken, a.opts.Version, a.age.Recipient)
		if err == nil || !a.holdOff(ctx, "join", err) || ctx.Err() != nil {
			return id, err
		}
	}
}

// Joined is what joining a hub gives: the cluster identity, its client certificate and the
// hub's CA.
type Joined struct {
	Cluster     string
	Certificate tls.Certificate
	CAPEM       []byte
}

// Join joins the hub with a one-time token as an agent does (a fresh key, the CA pinned by the
// token) and returns the certificate, for programs that speak the protocol without running
// an agent: tests, benchmarks, the fleet simulator.
func Join(ctx context.Context, hubURL, token string) (Joined, error) {
	id, err := join(ctx, hubURL, token, "", "")
	if err != nil {
		return Joined{}, err
	}
	cert, err := tls.X509KeyPair(id.CertPEM, id.KeyPEM)
	if err != nil {
		return Joined{}, fmt.Errorf("cluster %q: certificate from the hub: %w", id.Cluster, err)
	}
	return Joined{Cluster: id.Cluster, Certificate: cert, CAPEM: id.CAPEM}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// clientCert holds the agent's current certificate; renewal swaps it without rebuilding the
// HTTP client, and each new TLS handshake presents the current one.
type clientCert struct {
	p atomic.Pointer[tls.Certificate]
}

func (c *clientCert) set(id *identity) error {
	cert, err := tls.X509KeyPair(id.CertPEM, id.KeyPEM)
	if err != nil {
		return fmt.Errorf("cluster %q: load agent certificate: %w", id.Cluster, err)
	}
	c.p.Store(&cert)
	return nil
}

// mtlsClient is the agent's HTTP client: its certificate, and only the hub's CA as root. One
// HTTP/2 connection carries the watch stream, reports, heartbeats and artifact downloads.
// dial, when set, opens the TCP connections; wrap, when set, wraps the transport; h2 is the
// HTTP/2 configuration (the PINGs that find a dead connection: hubHTTP2).
func mtlsClient(id *identity, cert *clientCert, dial func(context.Context, string, string) (net.Conn, error), wrap func(http.RoundTripper) http.RoundTripper, h2 *http.HTTP2Config) (*http.Client, *swappableTransport, error) {
	if err := cert.set(id); err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(id.CAPEM) {
		return nil, nil, fmt.Errorf("cluster %q: hub CA in the state dir is not valid PEM", id.Cluster)
	}
	st := &swappableTransport{newTransport: func() *http.Transport {
		return &http.Transport{
			ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12,
				RootCAs:    pool,
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
					return cert.p.Load(), nil
				},
			},
			IdleConnTimeout: 90 * time.Second,
			DialContext:     dial,
			HTTP2:           h2,
		}
	}}
	st.renew()
	var rt http.RoundTripper = st
	if wrap != nil {
		rt = wrap(rt)
	}
	return &http.Client{Transport: rt}, st, nil
}

// swappableTransport lets a renewed certificate take effect at once: the hub checks the
// certificate on every request, and requests on a connection opened with the old one would
// fail once it expires. After renew, new requests use fresh connections; streams already
// open finish on the old ones.
type swappableTransport struct {
	newTransport func() *http.Transport
	cur          atomic.Pointer[http.Transport]
}

func (s *swappableTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return s.cur.Load().RoundTrip(r)
}

func (s *swappableTransport) renew() {
	if old := s.cur.Swap(s.newTransport()); old != nil {
		old.CloseIdleConnections()
	}
}

// renewLoop replaces the certificate once two thirds of its lifetime have passed, checking
// again at that point (within a second to an hour) rather than on a fixed period, so short
// certificate lifetimes work too.
func (a *Agent) renewLoop(ctx context.Context) {
	for {
		next, err := a.renewIfDue(ctx)
		if err != nil && ctx.Err() == nil {
			a.log.Warn("certificate renewal failed; will retry", "error", err)
			next = time.Minute
		}
		a.sleep(ctx, min(max(next, time.Second), time.Hour))
		if ctx.Err() != nil {
			return
		}
	}
}

// renewIfDue renews the certificate if it is due and says when to look again.
func (a *Agent) renewIfDue(ctx context.Context) (time.Duration, error) {
	current := a.id.CertPEM
	if a.renewedCertPEM != nil {
		current = a.renewedCertPEM
	}
	cert, err := parseCert(current)
	if err != nil {
		return 0, fmt.Errorf("cluster %q: agent certificate: %w", a.id.Cluster, err)
	}
	if !pki.NeedsRenewal(cert, a.clock.Now()) {
		return renewalPoint(cert, a.clock.Now()), nil
	}
	key, err := pki.NewAgentKey()
	if err != nil {
		return 0, err
	}
	csr, err := pki.CreateCSR(key, a.id.Cluster)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Renew(ctx, connect.NewRequest(&agentv1.RenewRequest{CsrPem: csr}))
	if err != nil {
		return 0, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return 0, err
	}
	id := *a.id
	id.KeyPEM, id.CertPEM = keyPEM, resp.Msg.GetCertificatePem()
	if err := a.st.saveIdentity(&id); err != nil {
		return 0, err
	}
	// New connections present the new certificate; the old one stays valid until it expires.
	if err := a.cert.set(&id); err != nil {
		return 0, err
	}
	a.renewedCertPEM = id.CertPEM
	a.transport.renew()
	a.log.Info("renewed agent certificate")
	newCert, err := parseCert(id.CertPEM)
	if err != nil {
		return 0, err
	}
	return renewalPoint(newCert, a.clock.Now()), nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, fmt.Errorf("not PEM")
	}
	return x509.ParseCertificate(block.Bytes)
}

// renewalPoint is how long after now two thirds of cert's lifetime have passed.
func renewalPoint(cert *x509.Certificate, now time.Time) time.Duration {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life * 2 / 3).Sub(now)
}
