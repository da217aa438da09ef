package secrets

import (
	"fmt"
	"strings"

	"filippo.io/age"
)

// MaxRecipientLen bounds a recipient an agent or a user sends: an X25519 recipient is 62
// characters ("age1" and 58 of Bech32).
const MaxRecipientLen = 100

// Key is an age X25519 key pair.
type Key struct {
	// Identity is the private half, AGE-SECRET-KEY-1...: only ever in an agent's state dir
	// or an operator's recovery key file.
	Identity string
	// Recipient is the public half, age1...
	Recipient string
}

// NewKey generates a key pair.
func NewKey() (Key, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return Key{}, fmt.Errorf("generate age key: %w", err)
	}
	return Key{Identity: id.String(), Recipient: id.Recipient().String()}, nil
}

// ParseIdentity reads an identity file: one AGE-SECRET-KEY-1... line, with # comments and
// blank lines allowed, as age-keygen writes it. It returns the key pair.
func ParseIdentity(data []byte) (Key, error) {
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		found = append(found, line)
	}
	if len(found) != 1 {
		return Key{}, fmt.Errorf("age identity: want one AGE-SECRET-KEY-1... line, found %d non-comment lines", len(found))
	}
	id, err := age.ParseX25519Identity(found[0])
	if err != nil {
		// age's message does not quote the key; keep it that way.
		return Key{}, fmt.Errorf("age identity: %w", err)
	}
	return Key{Identity: id.String(), Recipient: id.Recipient().String()}, nil
}

// FormatIdentity is an identity file, as age-keygen writes it: usable as SOPS_AGE_KEY_FILE.
func FormatIdentity(k Key) []byte {
	return []byte("# public key: " + k.Recipient + "\n" + k.Identity + "\n")
}

// CheckRecipient reports whether r is an age X25519 recipient of bounded length.
func CheckRecipient(r string) error {
	if len(r) > MaxRecipientLen {
		return fmt.Errorf("age recipient: %d characters, at most %d", len(r), MaxRecipientLen)
	}
	if _, err := age.ParseX25519Recipient(r); err != nil {
		return fmt.Errorf("age recipient %q: %w", r, err)
	}
	return nil
}
