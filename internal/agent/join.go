package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
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
func join(ctx context.Context, hubURL, rawToken, version string) (*identity, error) {
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
	c := agentv1connect.NewJoinServiceClient(pinned, hubURL)
	resp, err := c.Join(ctx, connect.NewRequest(&agentv1.JoinRequest{Token: rawToken, CsrPem: csr, AgentVersion: version}))
	if err != nil {
		return nil, fmt.Errorf("join %s as cluster %q: %w", hubURL, tok.Cluster, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &identity{
		Cluster: resp.Msg.GetCluster(),
		HubURL:  hubURL,
		KeyPEM:  keyPEM,
		CertPEM: resp.Msg.GetCertificatePem(),
		CAPEM:   resp.Msg.GetCaPem(),
	}, nil
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
func mtlsClient(id *identity, cert *clientCert) (*http.Client, error) {
	if err := cert.set(id); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(id.CAPEM) {
		return nil, fmt.Errorf("cluster %q: hub CA in the state dir is not valid PEM", id.Cluster)
	}
	return &http.Client{Transport: &http.Transport{
		ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    pool,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return cert.p.Load(), nil
			},
		},
		IdleConnTimeout: 90 * time.Second,
	}}, nil
}

// renewLoop replaces the certificate once two thirds of its lifetime have passed.
func (a *Agent) renewLoop(ctx context.Context) {
	for {
		if err := a.renewIfDue(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("certificate renewal failed; will retry", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Minute):
		}
	}
}

func (a *Agent) renewIfDue(ctx context.Context) error {
	block, _ := pem.Decode(a.id.CertPEM)
	if block == nil {
		return fmt.Errorf("cluster %q: agent certificate is not PEM", a.id.Cluster)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	if !pki.NeedsRenewal(cert, time.Now()) {
		return nil
	}
	key, err := pki.NewAgentKey()
	if err != nil {
		return err
	}
	csr, err := pki.CreateCSR(key, a.id.Cluster)
	if err != nil {
		return err
	}
	resp, err := a.client.Renew(ctx, connect.NewRequest(&agentv1.RenewRequest{CsrPem: csr}))
	if err != nil {
		return err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	id := *a.id
	id.KeyPEM, id.CertPEM = keyPEM, resp.Msg.GetCertificatePem()
	if err := a.st.saveIdentity(&id); err != nil {
		return err
	}
	// New connections present the new certificate; the old one stays valid until it expires.
	if err := a.cert.set(&id); err != nil {
		return err
	}
	a.id = &id
	a.log.Info("renewed agent certificate")
	return nil
}
