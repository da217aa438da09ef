package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSignAgentCSR(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	key, err := NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	// The agent asks for far more than it is given.
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "kube-admin", Organization: []string{"system:masters"}},
		DNSNames:    []string{"hub.example.com"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
		URIs:        []*url.URL{clusterURI("production")},
	}, key)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name         string
		ttl          time.Duration
		wantNotAfter time.Time
	}{
		{name: "sets the identity itself", ttl: 90 * 24 * time.Hour, wantNotAfter: testNow.Add(90 * 24 * time.Hour)},
		{name: "never outlives the CA", ttl: 2 * caLifetime, wantNotAfter: ca.Certificate().NotAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, serial, notAfter, err := ca.SignAgentCSR(pemBlock("CERTIFICATE REQUEST", csrDER), "staging.eu-west-1", tt.ttl, testNow)
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCertPEM(t, certPEM)
			if cert.Subject.CommonName != "staging.eu-west-1" || len(cert.Subject.Organization) != 0 {
				t.Errorf("subject = %v, want CN=staging.eu-west-1 only", cert.Subject)
			}
			if len(cert.URIs) != 1 || cert.URIs[0].String() != "flotilla://cluster/staging.eu-west-1" {
				t.Errorf("URIs = %v, want [flotilla://cluster/staging.eu-west-1]", cert.URIs)
			}
			if len(cert.DNSNames) != 0 || len(cert.IPAddresses) != 0 {
				t.Errorf("SANs from the CSR leaked through: %v %v", cert.DNSNames, cert.IPAddresses)
			}
			if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || len(cert.UnknownExtKeyUsage) != 0 {
				t.Errorf("ExtKeyUsage = %v %v, want ClientAuth only", cert.ExtKeyUsage, cert.UnknownExtKeyUsage)
			}
			if cert.IsCA {
				t.Error("agent certificate is a CA")
			}
			if !key.PublicKey.Equal(cert.PublicKey) {
				t.Error("certificate is not for the CSR's key")
			}
			if len(serial) != 32 || serial != strings.ToLower(serial) || serial != serialHex(cert.SerialNumber) {
				t.Errorf("serial = %q, want the certificate's serial %s as 32 lowercase hex digits", serial, serialHex(cert.SerialNumber))
			}
			if !notAfter.Equal(cert.NotAfter) || !notAfter.Equal(tt.wantNotAfter) {
				t.Errorf("notAfter = %v (certificate %v), want %v", notAfter, cert.NotAfter, tt.wantNotAfter)
			}
			if want := testNow.Add(-clockSkew); !cert.NotBefore.Equal(want) {
				t.Errorf("NotBefore = %v, want %v", cert.NotBefore, want)
			}
			if got, err := ClusterFromCertificate(cert); err != nil || got != "staging.eu-west-1" {
				t.Errorf("ClusterFromCertificate() = %q, %v; want staging.eu-west-1", got, err)
			}
		})
	}

	t.Run("serials differ", func(t *testing.T) {
		a := newAgentCert(t, ca, "prod", time.Hour)
		b := newAgentCert(t, ca, "prod", time.Hour)
		if a.serial == b.serial {
			t.Errorf("two certificates share serial %s", a.serial)
		}
	})
}

func TestSignAgentCSRErrors(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	key, err := NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	good, err := CreateCSR(key, "prod")
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384CSR, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, p384)
	if err != nil {
		t.Fatal(err)
	}
	// Changing the requested name after signing leaves a CSR that parses but whose
	// signature does not match: someone else's key would be certified.
	signedDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "aaaaaaaa"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	tampered := pemBlock("CERTIFICATE REQUEST", bytes.Replace(signedDER, []byte("aaaaaaaa"), []byte("bbbbbbbb"), 1))

	tests := []struct {
		name    string
		csr     []byte
		cluster string
		ttl     time.Duration
		now     time.Time
		wantErr string
	}{
		{name: "not PEM", csr: []byte("hello"), cluster: "prod", wantErr: `agent certificate for cluster "prod": CSR: no PEM data`},
		{name: "wrong PEM type", csr: ca.CertPEM(), cluster: "prod", wantErr: `CSR: PEM block is "CERTIFICATE"`},
		{name: "bad signature", csr: tampered, cluster: "prod", wantErr: "CSR: x509: ECDSA verification failure"},
		{name: "not P-256", csr: pemBlock("CERTIFICATE REQUEST", p384CSR), cluster: "prod", wantErr: "CSR: public key is not ECDSA P-256"},
		{name: "invalid cluster", csr: good, cluster: "Prod_EU", wantErr: `agent certificate: cluster name "Prod_EU": invalid character 'P'`},
		{name: "no lifetime", csr: good, cluster: "prod", ttl: -1, wantErr: "lifetime -1ns: must be positive"},
		{name: "expired CA", csr: good, cluster: "prod", now: testNow.Add(caLifetime + time.Hour), wantErr: "CA expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ttl, now := tt.ttl, tt.now
			if ttl == 0 {
				ttl = time.Hour
			}
			if now.IsZero() {
				now = testNow
			}
			certPEM, serial, _, err := ca.SignAgentCSR(tt.csr, tt.cluster, ttl, now)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SignAgentCSR() error = %s, want it to contain %q", errString(err), tt.wantErr)
			}
			if certPEM != nil || serial != "" {
				t.Errorf("SignAgentCSR() returned a certificate with error %v", err)
			}
		})
	}
}

func TestCreateCSRErrors(t *testing.T) {
	t.Parallel()
	key, err := NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		key     *ecdsa.PrivateKey
		cluster string
		wantErr string
	}{
		{name: "no key", cluster: "prod", wantErr: `CSR for cluster "prod": no key`},
		{name: "empty cluster", key: key, wantErr: "CSR: cluster name: empty"},
		{name: "slash in cluster", key: key, cluster: "prod/eu", wantErr: `CSR: cluster name "prod/eu": invalid character '/'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CreateCSR(tt.key, tt.cluster)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CreateCSR() error = %s, want it to contain %q", errString(err), tt.wantErr)
			}
		})
	}
}

func TestClusterFromCertificate(t *testing.T) {
	t.Parallel()
	uris := func(ss ...string) []*url.URL {
		var us []*url.URL
		for _, s := range ss {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			us = append(us, u)
		}
		return us
	}
	tests := []struct {
		name    string
		cert    *x509.Certificate
		want    string
		wantErr string
	}{
		{name: "dots and dashes", cert: &x509.Certificate{URIs: uris("flotilla://cluster/prod.eu-west-1")}, want: "prod.eu-west-1"},
		{name: "other URI schemes ignored", cert: &x509.Certificate{URIs: uris("spiffe://example.org/x", "flotilla://cluster/edge-7")}, want: "edge-7"},
		{name: "CommonName is not an identity", cert: &x509.Certificate{Subject: pkix.Name{CommonName: "prod"}}, wantErr: "no flotilla:// URI SAN"},
		{name: "two identities", cert: &x509.Certificate{URIs: uris("flotilla://cluster/a", "flotilla://cluster/b")}, wantErr: "2 flotilla:// URI SANs, want one"},
		{name: "wrong host", cert: &x509.Certificate{URIs: uris("flotilla://hub/prod")}, wantErr: "want flotilla://cluster/<cluster>"},
		{name: "port", cert: &x509.Certificate{URIs: uris("flotilla://cluster:443/prod")}, wantErr: "want flotilla://cluster/<cluster>"},
		{name: "query", cert: &x509.Certificate{URIs: uris("flotilla://cluster/prod?as=admin")}, wantErr: "want flotilla://cluster/<cluster>"},
		{name: "escaped path", cert: &x509.Certificate{URIs: uris("flotilla://cluster/pr%6Fd")}, wantErr: "want flotilla://cluster/<cluster>"},
		{name: "nested path", cert: &x509.Certificate{URIs: uris("flotilla://cluster/prod/eu")}, wantErr: `invalid character '/'`},
		{name: "empty name", cert: &x509.Certificate{URIs: uris("flotilla://cluster/")}, wantErr: "cluster name: empty"},
		{name: "uppercase name", cert: &x509.Certificate{URIs: uris("flotilla://cluster/Prod")}, wantErr: "invalid character 'P'"},
		{name: "no certificate", wantErr: "agent certificate: none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cert != nil && tt.cert.SerialNumber == nil {
				tt.cert.SerialNumber = bigOne()
			}
			got, err := ClusterFromCertificate(tt.cert)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ClusterFromCertificate() = %q, %s; want error containing %q", got, errString(err), tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ClusterFromCertificate() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	t.Parallel()
	start := testNow
	cert := &x509.Certificate{NotBefore: start, NotAfter: start.Add(3 * time.Hour)}
	// A lifetime not divisible by three: two thirds of 3h+2ns is 2h+1.33ns, first reached at 2h+2ns.
	odd := &x509.Certificate{NotBefore: start, NotAfter: start.Add(3*time.Hour + 2)}
	tests := []struct {
		name string
		cert *x509.Certificate
		now  time.Time
		want bool
	}{
		{name: "not yet valid", cert: cert, now: start.Add(-time.Minute), want: false},
		{name: "fresh", cert: cert, now: start, want: false},
		{name: "just before two thirds", cert: cert, now: start.Add(2*time.Hour - 1), want: false},
		{name: "at two thirds", cert: cert, now: start.Add(2 * time.Hour), want: true},
		{name: "past two thirds", cert: cert, now: start.Add(2*time.Hour + time.Minute), want: true},
		{name: "at expiry", cert: cert, now: start.Add(3 * time.Hour), want: true},
		{name: "expired", cert: cert, now: start.Add(300 * 24 * time.Hour), want: true},
		{name: "odd lifetime, before", cert: odd, now: start.Add(2*time.Hour + 1), want: false},
		{name: "odd lifetime, at", cert: odd, now: start.Add(2*time.Hour + 2), want: true},
		{name: "no certificate", cert: nil, now: start, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsRenewal(tt.cert, tt.now); got != tt.want {
				t.Errorf("NeedsRenewal(at %v) = %v, want %v", tt.now.Sub(start), got, tt.want)
			}
		})
	}

	t.Run("hub-signed certificate", func(t *testing.T) {
		a := newAgentCert(t, newTestCA(t), "prod", 90*24*time.Hour)
		life := a.cert.NotAfter.Sub(a.cert.NotBefore)
		twoThirds := a.cert.NotBefore.Add(life - life/3)
		if NeedsRenewal(a.cert, testNow) || NeedsRenewal(a.cert, twoThirds.Add(-time.Second)) {
			t.Error("renewal wanted before two thirds of the lifetime")
		}
		if !NeedsRenewal(a.cert, twoThirds) {
			t.Error("renewal not wanted at two thirds of the lifetime")
		}
	})
}

func TestSignAgentRenewalNamesTheReplacedSerial(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := LoadOrCreateCA(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewAgentKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := CreateCSR(key, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	first, serial, _, err := ca.SignAgentCSR(csr, "edge-1", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	renewed, serial2, _, err := ca.SignAgentRenewal(csr, "edge-1", serial, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(p []byte) *x509.Certificate {
		block, _ := pem.Decode(p)
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := ReplacedSerial(parse(first)); got != "" {
		t.Errorf("a joined certificate replaces %q; want none", got)
	}
	if got := ReplacedSerial(parse(renewed)); got != serial || serial2 == serial {
		t.Errorf("renewed certificate %s replaces %q; want %s", serial2, got, serial)
	}
	if _, _, err := ca.VerifyAgent([][]byte{parse(renewed).Raw}, now); err != nil {
		t.Errorf("renewed certificate does not verify: %v", err)
	}
	if _, _, _, err := ca.SignAgentRenewal(csr, "edge-1", "nope", time.Hour, now); err == nil {
		t.Error("a renewal naming a malformed serial was signed")
	}
}
