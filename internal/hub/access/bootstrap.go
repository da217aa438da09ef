package access

import (
	"crypto/subtle"
	"fmt"
	"os"
	"strings"
)

// BootstrapName is the bootstrap token's name: the admin token in the data dir's admin.token.
const BootstrapName = "admin"

// MinBootstrapLength is the shortest token admin.token may hold. The hub writes 64 hex
// characters; a shorter one (an empty file above all) is refused rather than accepted.
const MinBootstrapLength = 32

// LoadOrCreateBootstrap reads the bootstrap admin token from path, or writes a new one there
// if the file does not exist. A file that holds fewer than MinBootstrapLength characters
// (whitespace trimmed) is an error: an empty one must not mean "no authentication".
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
	if len(tok) < MinBootstrapLength {
		return "", fmt.Errorf("admin token %s holds %d characters, fewer than %d: refusing to start with a guessable (or, empty, no) admin token; delete the file to have a new one written", path, len(tok), MinBootstrapLength)
	}
	return tok, nil
}

// matchBootstrap compares a bearer token with the bootstrap token in constant time.
func matchBootstrap(bootstrap, got string) bool {
	return bootstrap != "" && subtle.ConstantTimeCompare([]byte(bootstrap), []byte(got)) == 1
}
