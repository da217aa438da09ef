package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
)

const digestPrefix = "sha256:"

// ParseDigest checks that digest has the form "sha256:<64 lowercase hex>" and
// returns the hex part. Only that exact form is accepted so that a digest can
// be used as a file name without any further escaping.
func ParseDigest(digest string) (string, error) {
	hx, ok := strings.CutPrefix(digest, digestPrefix)
	if !ok {
		return "", fmt.Errorf("digest %q: want the form sha256:<64 hex digits>", digest)
	}
	if len(hx) != sha256.Size*2 {
		return "", fmt.Errorf("digest %q: want 64 hex digits, got %d characters", digest, len(hx))
	}
	for _, c := range hx {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", fmt.Errorf("digest %q: want lowercase hex digits only", digest)
		}
	}
	return hx, nil
}

func formatDigest(h hash.Hash) string {
	return digestPrefix + hex.EncodeToString(h.Sum(nil))
}

// DigestMismatchError reports content whose digest is not the expected one.
type DigestMismatchError struct {
	// Path is the file that was checked, empty for a stream.
	Path     string
	Expected string
	Actual   string
}

func (e *DigestMismatchError) Error() string {
	what := "artifact"
	if e.Path != "" {
		what = "artifact " + e.Path
	}
	return fmt.Sprintf("%s: digest mismatch: expected %s, got %s", what, e.Expected, e.Actual)
}

// Verifier is an io.Writer that hashes what is written to it, so that a
// download can be verified while it is written to disk (io.MultiWriter).
type Verifier struct {
	expected string
	h        hash.Hash
	n        int64
}

// NewVerifier returns a Verifier expecting content with the given digest.
func NewVerifier(digest string) (*Verifier, error) {
	if _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	return &Verifier{expected: digest, h: sha256.New()}, nil
}

// Write hashes p. It never fails.
func (v *Verifier) Write(p []byte) (int, error) {
	v.n += int64(len(p))
	return v.h.Write(p)
}

// Size returns the number of bytes written so far.
func (v *Verifier) Size() int64 { return v.n }

// Digest returns the digest of the bytes written so far.
func (v *Verifier) Digest() string { return formatDigest(v.h) }

// Verify returns a *DigestMismatchError unless the bytes written so far have
// the expected digest.
func (v *Verifier) Verify() error {
	if got := v.Digest(); got != v.expected {
		return &DigestMismatchError{Expected: v.expected, Actual: got}
	}
	return nil
}

// VerifyFile checks that the file at path has the given digest. A mismatch
// is a *DigestMismatchError.
func VerifyFile(path, digest string) error {
	v, err := NewVerifier(digest)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	if _, err := io.Copy(v, f); err != nil {
		return fmt.Errorf("artifact %s: read: %w", path, err)
	}
	if err := v.Verify(); err != nil {
		err.(*DigestMismatchError).Path = path
		return err
	}
	return nil
}
