package replica

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla/flotilla/internal/pki"
)

// Identity is what every replica must hold alike in its data dir: agents trust one CA and
// present certificates it signed to whichever replica they reach, and users hold one admin
// token.
type Identity struct {
	// DataDir holds Files.
	DataDir string
	// Files are the names, in DataDir, shared by every replica.
	Files []string
	// Create makes sure every file exists in DataDir, loading or creating it.
	Create func() error
	// Secrets are the Files that are secret (the CA key, the admin token): they are stored
	// sealed with the key of Options.SecretsKeyFile, which a shared store then requires.
	Secrets []string
}

// shareIdentity makes this replica's identity files those of the shared store. The first
// replica to start (or a hub that moved from SQLite to PostgreSQL) stores its own; every later
// one writes the stored ones into its data dir. A data dir that already holds different ones
// is refused rather than overwritten: agents that trust its CA would be locked out.
//
// The secret ones (the CA key, the admin token) are stored sealed with key (see sealed.go):
// the database alone holds nothing that signs a certificate or passes for the admin.
func shareIdentity(ctx context.Context, st SharedStore, id Identity, key []byte) error {
	// Make sure this data dir has the files (its own, or newly created), then offer them:
	// the store keeps the first offer and returns what it keeps.
	existed := map[string]bool{}
	for _, name := range id.Files {
		if _, err := os.Stat(filepath.Join(id.DataDir, name)); err == nil {
			existed[name] = true
		}
	}
	if err := id.Create(); err != nil {
		return err
	}
	local := map[string][]byte{}
	for _, name := range id.Files {
		data, err := os.ReadFile(filepath.Join(id.DataDir, name))
		if err != nil {
			return fmt.Errorf("shared identity: %w", err)
		}
		local[name] = data
	}
	offer := maps.Clone(local)
	for _, name := range id.Secrets {
		sealed, err := seal(key, name, local[name])
		if err != nil {
			return fmt.Errorf("shared identity: seal %s: %w", name, err)
		}
		offer[name] = sealed
	}
	stored, err := st.ShareFiles(ctx, offer)
	if err != nil {
		return err
	}
	for _, name := range id.Secrets {
		data := stored[name]
		if !isSealed(data) {
			// A plaintext row of a hub from before sealing: seal it in place now.
			sealed, err := seal(key, name, data)
			if err != nil {
				return fmt.Errorf("shared identity: seal %s: %w", name, err)
			}
			if err := st.PutSharedFile(ctx, name, sealed); err != nil {
				return fmt.Errorf("shared identity: seal the stored %s: %w", name, err)
			}
			continue
		}
		if stored[name], err = unseal(key, name, data); err != nil {
			return err
		}
	}
	for _, name := range id.Files {
		if bytes.Equal(stored[name], local[name]) {
			continue
		}
		path := filepath.Join(id.DataDir, name)
		if existed[name] {
			return fmt.Errorf("%s differs from the %s the other hub replicas share through the store: "+
				"this data dir belonged to another hub; move %s aside (and %s) to use the shared ones",
				path, name, path, strings.Join(others(id.Files, name), ", "))
		}
		mode := os.FileMode(0o600)
		if name == pki.CACertFile {
			mode = 0o644 // public, as pki writes it
		}
		if err := os.WriteFile(path, stored[name], mode); err != nil {
			return fmt.Errorf("shared identity: %w", err)
		}
	}
	return nil
}

func others(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}
