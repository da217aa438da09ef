package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// clockSkew is how far certificates are backdated, so that a peer whose clock runs a little
// behind the hub's does not reject a certificate issued a moment ago.
const clockSkew = 5 * time.Minute

// randomSerial returns 128 random bits, well beyond the 64 that CA practice asks for, so
// that serials can serve as the store's key for revocation without collisions.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("serial: %w", err)
		}
		// x509 requires a positive serial; zero comes up once in 2^128 draws.
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// serialHex is the form in which serials are returned and stored: lowercase hex, zero-padded
// to 32 digits so that equal serials always compare equal as strings.
func serialHex(n *big.Int) string { return fmt.Sprintf("%032x", n) }

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// decodePEM returns the DER of the first PEM block in data, which must be of type typ.
func decodePEM(data []byte, typ string) ([]byte, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM data")
	}
	if b.Type != typ {
		return nil, fmt.Errorf("PEM block is %q, want %q", b.Type, typ)
	}
	return b.Bytes, nil
}

// parseECKey reads a P-256 private key in PKCS#8 ("PRIVATE KEY") or SEC 1 ("EC PRIVATE KEY")
// PEM form; the latter is what openssl ecparam writes, for operators who bring their own CA.
func parseECKey(data []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM data")
	}
	var key any
	var err error
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("PEM block is %q, want %q", b.Type, "PRIVATE KEY")
	}
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key")
	}
	return ec, nil
}

// validity returns the NotBefore and NotAfter of a certificate issued at now for ttl:
// backdated by clockSkew, and ending no later than the CA.
func (ca *CA) validity(now time.Time, ttl time.Duration) (time.Time, time.Time, error) {
	if ttl <= 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("lifetime %s: must be positive", ttl)
	}
	if now.After(ca.cert.NotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("CA expired at %s", ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	notAfter := now.Add(ttl)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	return now.Add(-clockSkew), notAfter, nil
}
