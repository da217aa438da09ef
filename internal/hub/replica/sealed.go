package replica

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Why secrets are sealed: the store is shared by every replica, and whoever reads its rows
// (a backup, a database admin, a leaked dump) must not get the CA key, which signs agent
// certificates and offline bundles, nor the admin token. Each replica reads the key that
// seals them from a file (a mounted Secret), never from the database.

// sealedPrefix starts a sealed row; it is the row's format version. A row without it is a
// plaintext row of an older hub, sealed on the first start with a key.
const sealedPrefix = "flotilla-sealed-v1:"

// SecretsKeySize is the size of the secrets key: AES-256.
const SecretsKeySize = 32

// LoadSecretsKey reads the secrets key from path: 64 hex digits (openssl rand -hex 32), with
// or without a trailing newline.
func LoadSecretsKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets key file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != SecretsKeySize {
		return nil, fmt.Errorf("secrets key file %s: want %d hex digits (openssl rand -hex %d), got %d characters", path, 2*SecretsKeySize, SecretsKeySize, len(s))
	}
	return key, nil
}

// isSealed reports whether a stored row is sealed.
func isSealed(data []byte) bool { return bytes.HasPrefix(data, []byte(sealedPrefix)) }

// seal encrypts plain with AES-256-GCM, the row's name as associated data so that a sealed
// row cannot be moved under another name.
func seal(key []byte, name string, plain []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte(sealedPrefix), nonce...)
	return aead.Seal(out, nonce, plain, []byte(name)), nil
}

// unseal opens a sealed row.
func unseal(key []byte, name string, data []byte) ([]byte, error) {
	if !isSealed(data) {
		return nil, fmt.Errorf("shared %s in the store is not sealed", name)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	rest := data[len(sealedPrefix):]
	if len(rest) < aead.NonceSize() {
		return nil, fmt.Errorf("shared %s in the store: sealed row of %d bytes is truncated", name, len(data))
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], []byte(name))
	if err != nil {
		return nil, fmt.Errorf("shared %s in the store cannot be opened with this --secrets-key-file: "+
			"it was sealed with another key (every replica needs the same key file)", name)
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != SecretsKeySize {
		return nil, errors.New("secrets key: want 32 bytes")
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
