package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// NewAgentKey generates the agent's private key. It is created and kept in the agent's
// cluster; only the CSR travels to the hub.
func NewAgentKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("agent key: generate: %w", err)
	}
	return key, nil
}

// CreateCSR returns a PEM certificate signing request for key, naming cluster. The name is a
// courtesy for logs: the hub sets the identity itself ([CA.SignAgentCSR]).
func CreateCSR(key *ecdsa.PrivateKey, cluster string) ([]byte, error) {
	if key == nil {
		return nil, fmt.Errorf("CSR for cluster %q: no key", cluster)
	}
	if err := validateClusterName(cluster); err != nil {
		return nil, fmt.Errorf("CSR: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cluster},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("CSR for cluster %q: %w", cluster, err)
	}
	return pemBlock("CERTIFICATE REQUEST", der), nil
}

// SignAgentCSR issues a client certificate for cluster to the key in csrPEM, valid for ttl
// from now and never beyond the CA. It checks that the requester holds the key (the CSR's
// signature) and that the key is ECDSA P-256, and takes nothing else from the CSR: the
// subject, SANs and extensions it asks for are ignored, because the cluster comes from the
// join token or the certificate being renewed, never from the requester. The certificate
// names the cluster in its CommonName and in the URI SAN flotilla://cluster/<cluster>, is
// for client authentication only, and has a 128-bit random serial, returned as 32 lowercase
// hex digits.
func (ca *CA) SignAgentCSR(csrPEM []byte, cluster string, ttl time.Duration, now time.Time) (certPEM []byte, serial string, notAfter time.Time, err error) {
	return ca.signAgentCSR(csrPEM, cluster, "", ttl, now)
}

// SignAgentRenewal is SignAgentCSR for a renewal: the certificate also names the serial of
// the certificate it replaces ([ReplacedSerial]), so that the hub can revoke that one once
// the agent first uses the new one, and a renewal whose answer was lost locks nobody out.
func (ca *CA) SignAgentRenewal(csrPEM []byte, cluster, replaces string, ttl time.Duration, now time.Time) (certPEM []byte, serial string, notAfter time.Time, err error) {
	if !isSerial(replaces) {
		return nil, "", time.Time{}, fmt.Errorf("agent certificate for cluster %q: replaced serial %q: want 32 lowercase hex digits", cluster, replaces)
	}
	return ca.signAgentCSR(csrPEM, cluster, replaces, ttl, now)
}

// oidReplaces is the non-critical extension that names the serial a renewed certificate
// replaces: an OID under 2.25 (UUID-derived arcs, no registration) with a random arc small
// enough for Go's certificate parser (31 bits).
var oidReplaces = asn1.ObjectIdentifier{2, 25, 957613527}

// ReplacedSerial returns the serial of the certificate cert replaced (32 lowercase hex digits),
// or "" when it replaced none (it came from a join). Only the hub's CA issues the extension.
func ReplacedSerial(cert *x509.Certificate) string {
	for _, e := range cert.Extensions {
		if e.Id.Equal(oidReplaces) {
			var s string
			if rest, err := asn1.Unmarshal(e.Value, &s); err == nil && len(rest) == 0 && isSerial(s) {
				return s
			}
		}
	}
	return ""
}

func isSerial(s string) bool {
	return len(s) == 32 && strings.Trim(s, "0123456789abcdef") == ""
}

func (ca *CA) signAgentCSR(csrPEM []byte, cluster, replaces string, ttl time.Duration, now time.Time) (certPEM []byte, serial string, notAfter time.Time, err error) {
	if err := validateClusterName(cluster); err != nil {
		return nil, "", time.Time{}, fmt.Errorf("agent certificate: %w", err)
	}
	fail := func(err error) ([]byte, string, time.Time, error) {
		return nil, "", time.Time{}, fmt.Errorf("agent certificate for cluster %q: %w", cluster, err)
	}
	der, err := decodePEM(csrPEM, "CERTIFICATE REQUEST")
	if err != nil {
		return fail(fmt.Errorf("CSR: %w", err))
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return fail(fmt.Errorf("CSR: %w", err))
	}
	if err := csr.CheckSignature(); err != nil {
		return fail(fmt.Errorf("CSR: %w", err))
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return fail(errors.New("CSR: public key is not ECDSA P-256"))
	}
	notBefore, end, err := ca.validity(now, ttl)
	if err != nil {
		return fail(err)
	}
	sn, err := randomSerial()
	if err != nil {
		return fail(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cluster},
		URIs:                  []*url.URL{clusterURI(cluster)},
		NotBefore:             notBefore,
		NotAfter:              end,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	if replaces != "" {
		v, err := asn1.Marshal(replaces)
		if err != nil {
			return fail(err)
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: oidReplaces, Value: v}}
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return fail(err)
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return fail(err)
	}
	// NotAfter from the parsed certificate: the encoding drops sub-second precision.
	return pemBlock("CERTIFICATE", certDER), serialHex(cert.SerialNumber), cert.NotAfter, nil
}

// NeedsRenewal reports whether cert has passed two thirds of its lifetime at now (or has no
// certificate at all), the point from which an agent should ask for a new one.
func NeedsRenewal(cert *x509.Certificate, now time.Time) bool {
	if cert == nil || !now.Before(cert.NotAfter) {
		return true
	}
	if now.Before(cert.NotBefore) {
		return false
	}
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	// elapsed >= ceil(2*lifetime/3), written so that it cannot overflow.
	return now.Sub(cert.NotBefore) >= lifetime-lifetime/3
}
