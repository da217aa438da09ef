package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// servingNames are the names and addresses the API server's certificate is valid for: the
// loopback addresses it listens on, plus the in-cluster names a client may use.
var servingNames = struct {
	dns []string
	ips []net.IP
}{
	dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
}

// pkiFiles are the paths of the key material written for one cluster.
type pkiFiles struct {
	caCert      string
	servingCert string
	servingKey  string
	saKey       string // signs and verifies service account tokens
	caPEM       []byte
}

// writePKI creates a fresh CA, a serving certificate signed by it and a service account key in
// dir. Every cluster gets its own, so a client configured for one cluster cannot talk to another.
func writePKI(dir string, now time.Time) (pkiFiles, error) {
	files := pkiFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "flotilla-local-cluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, fmt.Errorf("sign CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, fmt.Errorf("parse CA certificate: %w", err)
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, fmt.Errorf("generate serving key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     servingNames.dns,
		IPAddresses:  servingNames.ips,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return files, fmt.Errorf("sign serving certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, fmt.Errorf("generate service account key: %w", err)
	}

	files.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(files.caCert, files.caPEM, 0o600); err != nil {
		return files, err
	}
	if err := writePEM(files.servingCert, "CERTIFICATE", srvDER); err != nil {
		return files, err
	}
	if err := writeKey(files.servingKey, srvKey); err != nil {
		return files, err
	}
	if err := writeKey(files.saKey, saKey); err != nil {
		return files, err
	}
	return files, nil
}

// writeKey writes key in SEC 1 form ("EC PRIVATE KEY"): kube-apiserver's
// --service-account-key-file derives the public key from it, which it cannot from PKCS #8.
func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key %s: %w", path, err)
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, blockType string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}

func randomSerial() *big.Int {
	// 128 random bits, as RFC 5280 recommends; rand.Int only fails if the system's random
	// source is broken, and then the zero serial is the least of the problems.
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if n == nil {
		return big.NewInt(1)
	}
	return n
}
