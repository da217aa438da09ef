package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// PinnedVerifier returns a tls.Config.VerifyPeerCertificate callback for an agent's first
// connection to the hub, made before it has the CA certificate and knowing only the
// fingerprint prefix from its join token. It accepts the server if the presented chain
// contains a CA certificate whose SHA-256 fingerprint starts with fingerprintPrefix (at least
// 32 hex digits, either case) and the leaf verifies against that CA for server
// authentication at the current time. Use it as
//
//	&tls.Config{
//		// Safe: this turns off only the default verification against the system roots and
//		// the host name, which cannot apply to a private CA the agent does not have yet.
//		// VerifyPeerCertificate still runs inside the handshake, before any request is
//		// sent, and its error aborts the handshake. It replaces the default with a stricter
//		// check: the server proved in the handshake that it holds the leaf's key, and the
//		// leaf must be signed by the one CA the token pins. Hub-issued agent certificates
//		// are for client authentication only, so an agent cannot pose as the hub. Leave
//		// ClientSessionCache nil: resumed sessions skip VerifyPeerCertificate.
//		InsecureSkipVerify:    true,
//		VerifyPeerCertificate: pki.PinnedVerifier(token.CAFingerprint),
//	}
//
// The host name is not checked, deliberately: the CA is private to one hub, so any server
// certificate it issued is that hub's. Once the agent has fetched and saved the CA certificate
// over this connection, later connections use it as RootCAs with ordinary verification.
func PinnedVerifier(fingerprintPrefix string) func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	return pinnedVerifier(fingerprintPrefix, time.Now)
}

func pinnedVerifier(fingerprintPrefix string, now func() time.Time) func([][]byte, [][]*x509.Certificate) error {
	pin := strings.ToLower(fingerprintPrefix)
	var pinErr error
	if len(pin) < pinLen || len(pin) > fingerprintN || !isHex(pin) {
		// Checked here and reported on every handshake, as the callback signature leaves no
		// other way; a short or empty pin must never match everything.
		pinErr = fmt.Errorf("pinned CA fingerprint %q: want %d to %d hex digits", fingerprintPrefix, pinLen, fingerprintN)
	}
	return func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		if pinErr != nil {
			return pinErr
		}
		if len(rawCerts) == 0 {
			return errors.New("hub certificate: none presented")
		}
		certs := make([]*x509.Certificate, len(rawCerts))
		var pinned *x509.Certificate
		for i, raw := range rawCerts {
			c, err := x509.ParseCertificate(raw)
			if err != nil {
				return fmt.Errorf("hub certificate: chain entry %d: %w", i, err)
			}
			certs[i] = c
			sum := sha256.Sum256(raw)
			if pinned == nil && c.IsCA && c.BasicConstraintsValid && strings.HasPrefix(hex.EncodeToString(sum[:]), pin) {
				pinned = c
			}
		}
		if pinned == nil {
			return fmt.Errorf("hub certificate: no CA with fingerprint %s... in the chain presented", pin)
		}
		roots := x509.NewCertPool()
		roots.AddCert(pinned)
		intermediates := x509.NewCertPool()
		for _, c := range certs[1:] {
			intermediates.AddCert(c)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: intermediates,
			CurrentTime:   now(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}); err != nil {
			return fmt.Errorf("hub certificate: not issued by the pinned CA %s...: %w", pin, err)
		}
		return nil
	}
}
