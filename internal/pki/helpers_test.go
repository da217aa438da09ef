package pki

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"testing"
	"time"
)

// testNow is the clock of every test that does not say otherwise; fixed so that validity
// boundaries are exact.
var testNow = time.Date(2031, time.March, 14, 15, 9, 26, 0, time.UTC)

func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

func newTestCA(t *testing.T) *CA {
	t.Helper()
	ca, err := LoadOrCreateCA(t.TempDir(), testNow)
	if err != nil {
		t.Fatalf("LoadOrCreateCA: %v", err)
	}
	return ca
}

// agentCert is an agent's key and the certificate the hub signed for it.
type agentCert struct {
	key    *ecdsa.PrivateKey
	cert   *x509.Certificate
	serial string
}

func (a agentCert) tls() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{a.cert.Raw}, PrivateKey: a.key, Leaf: a.cert}
}

// newAgentCert goes through the join flow: agent key, CSR, hub signature.
func newAgentCert(t *testing.T, ca *CA, cluster string, ttl time.Duration) agentCert {
	t.Helper()
	key, err := NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := CreateCSR(key, cluster)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, serial, _, err := ca.SignAgentCSR(csr, cluster, ttl, testNow)
	if err != nil {
		t.Fatal(err)
	}
	return agentCert{key: key, cert: parseCertPEM(t, certPEM), serial: serial}
}

func parseCertPEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	der, err := decodePEM(data, "CERTIFICATE")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func bigOne() *big.Int { return big.NewInt(1) }
