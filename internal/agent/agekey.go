package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flotilla/flotilla/internal/secrets"
)

// ageKeyFile is the cluster's age identity in the state dir, in age-keygen's format (so an
// operator can hand it to sops as SOPS_AGE_KEY_FILE to recover). It is the only copy: only
// its recipient is ever sent, to the hub, and nothing logs it.
const ageKeyFile = "age.key"

// loadOrCreateAgeKey returns the cluster's age key, generating it on first use: at the join,
// or at the first start of an agent that joined before agents had one.
func loadOrCreateAgeKey(dir string) (secrets.Key, error) {
	path := filepath.Join(dir, ageKeyFile)
	data, err := os.ReadFile(path)
	if err == nil {
		k, err := secrets.ParseIdentity(data)
		if err != nil {
			return secrets.Key{}, fmt.Errorf("%s: %w", path, err)
		}
		// Whatever loosened it, the key is readable by this user only.
		if err := os.Chmod(path, 0o600); err != nil {
			return secrets.Key{}, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return secrets.Key{}, fmt.Errorf("age key: %w", err)
	}
	k, err := secrets.NewKey()
	if err != nil {
		return secrets.Key{}, err
	}
	if err := writePrivate(path, secrets.FormatIdentity(k)); err != nil {
		return secrets.Key{}, fmt.Errorf("age key: %w", err)
	}
	return k, nil
}

// writePrivate writes data to path with mode 0600 atomically: a crash leaves the old file or
// the new one, never a half-written key.
func writePrivate(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".age-key-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
