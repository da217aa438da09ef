package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/flotilla/flotilla/internal/textcut"
)

// BootstrapName is the bootstrap token's name: the admin token in the data dir's admin.token.
const BootstrapName = "admin"

// MinBootstrapLength is the shortest token admin.token may hold. The hub writes 64 hex
// characters; a shorter one (an empty file above all) is refused rather than accepted.
const MinBootstrapLength = 32

// BootstrapHashPrefix starts an admin.token (or a shared store's row) that holds the token's
// SHA-256 in hex rather than the token: what a replica that joined a shared store keeps, and
// all the store keeps. The token itself is in the admin.token of the replica that made it.
const BootstrapHashPrefix = "sha256:"

// LoadOrCreateBootstrap reads admin.token from path, or writes a new token there if the file
// does not exist. It returns the file's content, trimmed: the token, or its hash form
// (BootstrapHashPrefix). A token of fewer than MinBootstrapLength characters is an error (an
// empty file must not mean "no authentication"), and so is a hash form that does not parse.
func LoadOrCreateBootstrap(path string) (string, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		tok, err := NewSecret()
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write admin token %s: %w", path, err)
		}
		return tok, nil
	}
	if err != nil {
		return "", fmt.Errorf("admin token %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if _, err := parseBootstrap(tok, MinBootstrapLength); err != nil {
		return "", fmt.Errorf("admin token %s: %w", path, err)
	}
	return tok, nil
}

// HashBootstrap returns the hash form of an admin.token's content: the content itself when
// it is one already.
func HashBootstrap(content string) (string, error) {
	sum, err := parseBootstrap(strings.TrimSpace(content), MinBootstrapLength)
	if err != nil {
		return "", err
	}
	return BootstrapHashPrefix + hex.EncodeToString(sum[:]), nil
}

// IsBootstrapHash reports whether an admin.token's content is a hash form, not a token.
func IsBootstrapHash(content string) bool {
	return strings.HasPrefix(strings.TrimSpace(content), BootstrapHashPrefix)
}

// parseBootstrap returns the hash of a token of at least minLength characters, or of a hash form.
func parseBootstrap(s string, minLength int) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if h, ok := strings.CutPrefix(s, BootstrapHashPrefix); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return sum, fmt.Errorf("holds %q, not %s and 64 hex digits: refusing to start; delete the file to have a new token written", textcut.Cut(s, 20), BootstrapHashPrefix)
		}
		copy(sum[:], b)
		return sum, nil
	}
	if len(s) < max(minLength, 1) {
		return sum, fmt.Errorf("holds %d characters, fewer than %d: refusing to start with a guessable (or, empty, no) admin token; delete the file to have a new one written", len(s), max(minLength, 1))
	}
	return sha256.Sum256([]byte(s)), nil
}

// Bootstrap is the bootstrap admin token as the authenticator knows it: by its SHA-256 only,
// whether this hub holds the token or just its hash. It can be replaced while requests are
// served: replicas learn a rotated token's hash from the shared store.
type Bootstrap struct {
	sum atomic.Pointer[[sha256.Size]byte]
}

// NewBootstrap returns the bootstrap of an admin.token's content (a token or its hash form).
// Any token but an empty one is taken: LoadOrCreateBootstrap is what refuses short ones in
// the file.
func NewBootstrap(content string) (*Bootstrap, error) {
	b := &Bootstrap{}
	if _, err := b.Set(content); err != nil {
		return nil, err
	}
	return b, nil
}

// Set replaces the bootstrap with that of content (a token or its hash form), and reports
// whether that changed it.
func (b *Bootstrap) Set(content string) (changed bool, err error) {
	sum, err := parseBootstrap(strings.TrimSpace(content), 1)
	if err != nil {
		return false, fmt.Errorf("admin token: %w", err)
	}
	old := b.sum.Swap(&sum)
	return old == nil || *old != sum, nil
}

// Match reports, in constant time, whether bearer is the bootstrap admin token. A nil or unset
// Bootstrap matches nothing.
func (b *Bootstrap) Match(bearer string) bool {
	if b == nil || bearer == "" {
		return false
	}
	want := b.sum.Load()
	if want == nil {
		return false
	}
	got := sha256.Sum256([]byte(bearer))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}
