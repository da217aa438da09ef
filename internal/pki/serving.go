package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"time"
)

// ServingCertificate issues a certificate and fresh key for one of the hub's HTTPS listeners,
// valid for ttl from now (never beyond the CA) for each of hosts, which may be DNS names or IP
// addresses; exactly those are included, so the caller adds localhost and 127.0.0.1 if it
// wants them. The chain includes the CA certificate, because an agent joining with only a
// pinned fingerprint ([PinnedVerifier]) finds the CA in it.
func (ca *CA) ServingCertificate(hosts []string, ttl time.Duration, now time.Time) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, errors.New("serving certificate: no hosts")
	}
	notBefore, notAfter, err := ca.validity(now, ttl)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate for %v: %w", hosts, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate for %v: %w", hosts, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if h == "" {
			return tls.Certificate{}, fmt.Errorf("serving certificate for %v: empty host", hosts)
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate for %v: generate key: %w", hosts, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate for %v: %w", hosts, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serving certificate for %v: %w", hosts, err)
	}
	return tls.Certificate{
		Certificate: [][]byte{der, ca.cert.Raw},
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}
