package pki

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	tokenPrefix  = "flt1"
	tokenFields  = 5
	idBytes      = 8
	secretBytes  = 32
	idLen        = 2 * idBytes // hex
	secretLen    = 43          // unpadded base64url of secretBytes
	pinLen       = 32          // hex digits of the CA fingerprint: 128 bits
	fingerprintN = 64          // hex digits of a full SHA-256 fingerprint
)

// JoinToken lets an agent join the hub once as Cluster. See the package documentation for
// its string form.
type JoinToken struct {
	// ID is public: it names the token in the hub's store, logs and audit.
	ID string
	// Secret is what the agent proves it holds; the hub keeps only SecretHash(Secret).
	Secret string
	// Cluster is the identity the agent's certificate will carry.
	Cluster string
	// CAFingerprint is the pinned prefix of the hub CA's fingerprint, 32 lowercase hex
	// digits, for [PinnedVerifier].
	CAFingerprint string
}

// NewJoinToken returns a token with a fresh random ID and secret for cluster, pinned to the
// CA with fingerprint caFingerprint (as from [CA.Fingerprint]; only its first 32 hex digits
// are kept, which is what the token carries).
func NewJoinToken(cluster string, caFingerprint string) (JoinToken, error) {
	if err := validateClusterName(cluster); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	fp := strings.ToLower(caFingerprint)
	if len(fp) != fingerprintN || !isHex(fp) {
		return JoinToken{}, fmt.Errorf("join token for cluster %q: CA fingerprint %q: want %d hex digits", cluster, caFingerprint, fingerprintN)
	}
	buf := make([]byte, idBytes+secretBytes)
	if _, err := rand.Read(buf); err != nil {
		return JoinToken{}, fmt.Errorf("join token for cluster %q: %w", cluster, err)
	}
	return JoinToken{
		ID:            hex.EncodeToString(buf[:idBytes]),
		Secret:        base64.RawURLEncoding.EncodeToString(buf[idBytes:]),
		Cluster:       cluster,
		CAFingerprint: fp[:pinLen],
	}, nil
}

// Encode returns the token as one string to copy and paste:
// flt1.<cluster, unpadded base64url>.<id>.<secret>.<pin>.
func (t JoinToken) Encode() string {
	return strings.Join([]string{
		tokenPrefix,
		base64.RawURLEncoding.EncodeToString([]byte(t.Cluster)),
		t.ID,
		t.Secret,
		t.CAFingerprint,
	}, ".")
}

// String describes the token without its secret, so that logging a token does not leak it.
func (t JoinToken) String() string {
	return fmt.Sprintf("join token %s for cluster %q", t.ID, t.Cluster)
}

// GoString keeps the secret out of %#v as well.
func (t JoinToken) GoString() string {
	return fmt.Sprintf("pki.JoinToken{ID:%q, Secret:\"<redacted>\", Cluster:%q, CAFingerprint:%q}", t.ID, t.Cluster, t.CAFingerprint)
}

// ParseJoinToken parses the output of [JoinToken.Encode]. Surrounding whitespace, as copying
// from a terminal leaves, is ignored; the pin may be in either case. Errors say whether the
// string is not a token at all, was cut short, or is damaged.
func ParseJoinToken(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ".")
	if parts[0] != tokenPrefix {
		if v, ok := strings.CutPrefix(parts[0], "flt"); ok && v != "" && len(parts) > 1 && isDigits(v) {
			return JoinToken{}, fmt.Errorf("join token: unsupported version %q (this build reads %q)", parts[0], tokenPrefix)
		}
		return JoinToken{}, errors.New("join token: not a flotilla token")
	}
	if len(parts) < tokenFields {
		return JoinToken{}, errors.New("join token: truncated")
	}
	if len(parts) > tokenFields {
		return JoinToken{}, fmt.Errorf("join token: malformed: %d fields, want %d", len(parts), tokenFields)
	}
	rawCluster, id, secret, pin := parts[1], parts[2], parts[3], strings.ToLower(parts[4])

	cluster, err := base64.RawURLEncoding.Strict().DecodeString(rawCluster)
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token: malformed cluster: %w", err)
	}
	if err := validateClusterName(string(cluster)); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	if err := checkField("ID", id, idLen, isHex); err != nil {
		return JoinToken{}, err
	}
	if err := checkField("secret", secret, secretLen, isBase64URL); err != nil {
		return JoinToken{}, err
	}
	// 43 characters carry 258 bits; strict decoding rejects a last character whose spare
	// bits are set, so that each secret has one spelling.
	if b, err := base64.RawURLEncoding.Strict().DecodeString(secret); err != nil || len(b) != secretBytes {
		return JoinToken{}, errors.New("join token: malformed secret")
	}
	if err := checkField("CA pin", pin, pinLen, isHex); err != nil {
		return JoinToken{}, err
	}
	return JoinToken{ID: id, Secret: secret, Cluster: string(cluster), CAFingerprint: pin}, nil
}

// checkField reports a field shorter than want as truncated (the usual fate of a pasted
// token), and anything else wrong with it as malformed.
func checkField(name, v string, want int, valid func(string) bool) error {
	if !valid(v) {
		return fmt.Errorf("join token: malformed %s", name)
	}
	if len(v) < want {
		return fmt.Errorf("join token: truncated: %s has %d characters, want %d", name, len(v), want)
	}
	if len(v) > want {
		return fmt.Errorf("join token: malformed %s: %d characters, want %d", name, len(v), want)
	}
	return nil
}

// SecretHash is what the hub stores in place of a token's secret, and compares (with
// crypto/subtle.ConstantTimeCompare) against the hash of the secret an agent presents.
func SecretHash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isBase64URL(s string) bool {
	for _, c := range s {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
