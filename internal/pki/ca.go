package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const (
	// CACertFile and CAKeyFile are the names of the CA's files inside its directory.
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"

	// caLifetime is long because replacing the CA means re-joining every agent.
	caLifetime = 10 * 365 * 24 * time.Hour
	caName     = "flotilla hub CA"
)

// CA is the hub's certificate authority. It is immutable once loaded and safe for
// concurrent use.
type CA struct {
	cert        *x509.Certificate
	key         *ecdsa.PrivateKey
	certPEM     []byte
	fingerprint string
}

// LoadOrCreateCA loads the CA kept in dir (ca.crt, ca.key), or creates both, and dir, if
// neither exists. now is the creation time of a new CA. Having only one of the two files is
// an error rather than a reason to create a new CA: a new CA would silently lock out every
// agent that joined the old one.
func LoadOrCreateCA(dir string, now time.Time) (*CA, error) {
	certPath := filepath.Join(dir, CACertFile)
	keyPath := filepath.Join(dir, CAKeyFile)
	certExists, err := exists(certPath)
	if err != nil {
		return nil, err
	}
	keyExists, err := exists(keyPath)
	if err != nil {
		return nil, err
	}
	switch {
	case certExists && keyExists:
		return loadCA(certPath, keyPath, now)
	case certExists:
		return nil, fmt.Errorf("CA key %s: missing, but %s exists; restore it or remove both to create a new CA", keyPath, certPath)
	case keyExists:
		return nil, fmt.Errorf("CA certificate %s: missing, but %s exists; restore it or remove both to create a new CA", certPath, keyPath)
	}
	return createCA(dir, certPath, keyPath, now)
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("CA file %s: %w", path, err)
	}
}

func createCA(dir, certPath, keyPath string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: generate: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves only; an intermediate would be a second authority to guard.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: create: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("CA key: encode: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("CA directory %s: %w", dir, err)
	}
	// The key goes first: a crash between the two writes then leaves a key without a
	// certificate, which LoadOrCreateCA reports instead of replacing.
	if err := writeFileAtomic(keyPath, pemBlock("PRIVATE KEY", keyDER), 0o600); err != nil {
		return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
	}
	certPEM := pemBlock("CERTIFICATE", der)
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	return newCA(der, certPEM, key)
}

func loadCA(certPath, keyPath string, now time.Time) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	der, err := decodePEM(certPEM, "CERTIFICATE")
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
	}
	key, err := parseECKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
	}
	ca, err := newCA(der, certPEM, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	if now.After(ca.cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate %s: expired at %s", certPath, ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ca, nil
}

// newCA checks that der is a P-256 CA certificate for key and builds the CA.
func newCA(der, certPEM []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("not a CA certificate")
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("public key is not ECDSA P-256")
	}
	if !pub.Equal(&key.PublicKey) {
		return nil, errors.New("does not match the CA key")
	}
	sum := sha256.Sum256(der)
	return &CA{
		cert:        cert,
		key:         key,
		certPEM:     bytes.Clone(certPEM),
		fingerprint: hex.EncodeToString(sum[:]),
	}, nil
}

// CertPEM returns the CA certificate in PEM form, as agents need it to trust the hub.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// Certificate returns the parsed CA certificate. Callers must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Pool returns a new pool holding only the CA certificate; callers may add to it.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Fingerprint returns the lowercase hex SHA-256 of the CA certificate's DER encoding, the
// value join tokens pin.
func (ca *CA) Fingerprint() string { return ca.fingerprint }

// writeFileAtomic writes data to path through a temporary file in the same directory, so a
// reader never sees a partial file and mode holds whatever the umask.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close() // already failing: the first error is the one returned
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
