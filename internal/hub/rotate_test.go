package hub

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// agentWith is an agent service client presenting cert.
func (th *testHub) agentWith(cert tls.Certificate) agentv1connect.AgentServiceClient {
	return agentv1connect.NewAgentServiceClient(th.httpClient(cert), th.AgentURL())
}

func heartbeatErr(c agentv1connect.AgentServiceClient, t *testing.T) error {
	_, err := c.Heartbeat(t.Context(), connect.NewRequest(&agentv1.HeartbeatRequest{}))
	return err
}

func wantRevoked(t *testing.T, what string, err error) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "certificate revoked") {
		t.Fatalf("%s: %v; want permission_denied, certificate revoked", what, err)
	}
}

// TestRenewalRevokesReplacedCertificate: a renewed certificate names the one it replaces, and
// the first request with it revokes that one; until then the old one keeps working, so a
// renewal whose answer was lost locks nobody out.
func TestRenewalRevokesReplacedCertificate(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	j, err := th.api.AddCluster(t.Context(), "alpha", nil)
	if err != nil {
		t.Fatal(err)
	}
	joined, err := agent.Join(t.Context(), th.AgentURL(), j.JoinToken)
	if err != nil {
		t.Fatal(err)
	}
	old := th.agentWith(joined.Certificate)
	key, err := pki.NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.CreateCSR(key, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := old.Renew(t.Context(), connect.NewRequest(&agentv1.RenewRequest{CsrPem: csr}))
	if err != nil {
		t.Fatal(err)
	}
	if err := heartbeatErr(old, t); err != nil {
		t.Fatalf("the old certificate before the new one is used: %v", err)
	}
	keyPEM, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := tls.X509KeyPair(resp.Msg.GetCertificatePem(), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyPEM}))
	if err != nil {
		t.Fatal(err)
	}
	if err := heartbeatErr(th.agentWith(renewed), t); err != nil {
		t.Fatalf("the renewed certificate: %v", err)
	}
	wantRevoked(t, "the replaced certificate after the renewed one was used", heartbeatErr(th.agentWith(joined.Certificate), t))
	recs, err := th.api.Audit(t.Context(), hubclient.AuditFilter{Cluster: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		actions = append(actions, r.Action)
	}
	if got := strings.Join(actions, " "); !strings.Contains(got, "certificate.renewed") || !strings.Contains(got, "certificate.revoked") {
		t.Errorf("audit of alpha: %s; want certificate.renewed and certificate.revoked", got)
	}
}

// TestClusterRotate: rotate revokes every certificate and unused join token of the cluster,
// keeps the cluster, and its new token joins; a new `cluster token` revokes earlier unused
// ones.
func TestClusterRotate(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	a := th.addAgent(t, "alpha", map[string]string{"env": "prod"})
	if err := heartbeatErr(a.client, t); err != nil {
		t.Fatal(err)
	}
	first, err := th.api.NewJoinToken(t.Context(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	second, err := th.api.NewJoinToken(t.Context(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := th.join(t.Context(), first.JoinToken); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("join with a token issued before the newest: %v; want permission_denied, expired", err)
	}

	v, err := th.api.RotateCluster(t.Context(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if v.RevokedCertificates != 1 || v.RevokedTokens != 1 || v.JoinToken == "" {
		t.Errorf("rotate = %d certificates, %d tokens, token %q; want 1, 1 (the unused second token) and a new token", v.RevokedCertificates, v.RevokedTokens, v.JoinToken)
	}
	wantRevoked(t, "heartbeat after rotate", heartbeatErr(a.client, t))
	if _, err := th.join(t.Context(), second.JoinToken); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("join with a token unused at rotate: %v; want permission_denied", err)
	}
	c, err := th.api.Cluster(t.Context(), "alpha")
	if err != nil || c.Labels["env"] != "prod" {
		t.Fatalf("cluster after rotate: %+v, %v; want it kept with its labels", c, err)
	}
	cert, err := th.join(t.Context(), v.JoinToken)
	if err != nil {
		t.Fatalf("join with the token rotate issued: %v", err)
	}
	if err := heartbeatErr(th.agentWith(cert), t); err != nil {
		t.Fatalf("heartbeat after re-joining: %v", err)
	}
}
