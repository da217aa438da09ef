package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

const (
	uriScheme = "flotilla"
	uriHost   = "cluster"
)

// clusterURI is the identity an agent certificate carries: flotilla://cluster/<name>.
func clusterURI(cluster string) *url.URL {
	return &url.URL{Scheme: uriScheme, Host: uriHost, Path: "/" + cluster}
}

// ClusterFromCertificate returns the cluster an agent certificate identifies, from its URI
// SAN flotilla://cluster/<name>. The CommonName is not consulted: it is informational, and a
// certificate with exactly one such URI and a valid name is required. It does not verify the
// certificate; see [CA.VerifyAgent].
func ClusterFromCertificate(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", errors.New("agent certificate: none")
	}
	var found []string
	for _, u := range cert.URIs {
		if u.Scheme == uriScheme {
			found = append(found, u.String())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("agent certificate %s: no %s:// URI SAN", serialHex(cert.SerialNumber), uriScheme)
	case 1:
	default:
		return "", fmt.Errorf("agent certificate %s: %d %s:// URI SANs, want one", serialHex(cert.SerialNumber), len(found), uriScheme)
	}
	// Re-parse the string rather than trust the parsed fields: a canonical form
	// (no user, port, query, fragment or escapes) is the only one accepted.
	u, err := url.Parse(found[0])
	if err != nil {
		return "", fmt.Errorf("agent certificate %s: URI SAN %q: %w", serialHex(cert.SerialNumber), found[0], err)
	}
	name, ok := strings.CutPrefix(u.Path, "/")
	if u.Host != uriHost || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || !ok ||
		u.String() != clusterURI(name).String() {
		return "", fmt.Errorf("agent certificate %s: URI SAN %q: want %s://%s/<cluster>", serialHex(cert.SerialNumber), found[0], uriScheme, uriHost)
	}
	if err := validateClusterName(name); err != nil {
		return "", fmt.Errorf("agent certificate %s: URI SAN %q: %w", serialHex(cert.SerialNumber), found[0], err)
	}
	return name, nil
}

// VerifyAgent verifies a client certificate chain as presented in a TLS handshake (leaf
// first, as in tls.ConnectionState.PeerCertificates' Raw fields or a VerifyPeerCertificate
// callback) against the CA, for client authentication, at now. It returns the cluster the
// certificate identifies and its serial (32 lowercase hex digits), which the hub must still
// look up in its store: a valid signature does not mean the certificate was not revoked.
func (ca *CA) VerifyAgent(rawCerts [][]byte, now time.Time) (cluster, serial string, err error) {
	if len(rawCerts) == 0 {
		return "", "", errors.New("agent certificate: none presented")
	}
	certs := make([]*x509.Certificate, len(rawCerts))
	for i, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return "", "", fmt.Errorf("agent certificate: chain entry %d: %w", i, err)
		}
		certs[i] = c
	}
	leaf := certs[0]
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         ca.Pool(),
		Intermediates: intermediates,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return "", "", fmt.Errorf("agent certificate %s: %w", serialHex(leaf.SerialNumber), err)
	}
	cluster, err = ClusterFromCertificate(leaf)
	if err != nil {
		return "", "", err
	}
	return cluster, serialHex(leaf.SerialNumber), nil
}

// validateClusterName accepts DNS-1123 subdomains: at most 253 characters, dot-separated
// parts of lowercase letters, digits and '-', each starting and ending with a letter or digit.
func validateClusterName(name string) error {
	if name == "" {
		return errors.New("cluster name: empty")
	}
	if len(name) > 253 {
		return fmt.Errorf("cluster name %.20q...: longer than 253 characters", name)
	}
	for _, part := range strings.Split(name, ".") {
		if part == "" {
			return fmt.Errorf("cluster name %q: empty part between dots", name)
		}
		for i, c := range part {
			alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
			if !alnum && c != '-' {
				return fmt.Errorf("cluster name %q: invalid character %q (want lowercase letters, digits, '-' and '.')", name, c)
			}
			if !alnum && (i == 0 || i == len(part)-1) {
				return fmt.Errorf("cluster name %q: each part must start and end with a letter or digit", name)
			}
		}
	}
	return nil
}
