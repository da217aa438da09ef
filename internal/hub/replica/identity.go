package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	// Secrets are the Files that are secret and needed as they are (the CA key): they are
	// stored sealed with the key of Options.SecretsKeyFile, which a shared store then requires.
	Secrets []string
	// Hashed are the Files that only need to be recognised (the admin token): the store keeps
	// Hash of them, never the file, and a replica that joins writes that hash in its data dir.
	// A data dir whose own differs takes the stored one: it no longer opens this hub.
	Hashed []string
	// Hash turns a Hashed file's content into what the store keeps; it returns a hash as it is.
	Hash func(data []byte) ([]byte, error)
}

// shareIdentity makes this replica's identity files those of the shared store. The first
// replica to start (or a hub that moved from SQLite to PostgreSQL) stores its own; every later
// one writes the stored ones into its data dir. A data dir that already holds different ones
// is refused rather than overwritten: agents that trust its CA would be locked out.
//
// The secret ones (the CA key) are stored sealed with key (see sealed.go), the hashed ones (the
// admin token) as their hash: the database alone holds nothing that signs a certificate or
// passes for the admin.
func shareIdentity(ctx context.Context, st SharedStore, id Identity, key []byte, log *slog.Logger) error {
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
	for _, name := range id.Hashed {
		sum, err := id.Hash(local[name])
		if err != nil {
			return fmt.Errorf("shared identity: %s: %w", name, err)
		}
		offer[name] = sum
	}
	stored, err := st.ShareFiles(ctx, offer)
	if err != nil {
		return err
	}
	for _, name := range id.Hashed {
		if stored[name], err = storeHashed(ctx, st, id, key, name, stored[name]); err != nil {
			return err
		}
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
		path := filepath.Join(id.DataDir, name)
		if slices.Contains(id.Hashed, name) {
			if mine, err := id.Hash(local[name]); err == nil && bytes.Equal(mine, stored[name]) {
				continue // this data dir's own, or the hash it was given before
			}
			if existed[name] {
				log.Warn("replacing this data dir's file with the one the replicas share: what it held no longer opens this hub",
					"file", path)
			}
			if err := os.WriteFile(path, append(slices.Clone(stored[name]), '\n'), 0o600); err != nil {
				return fmt.Errorf("shared identity: %w", err)
			}
			continue
		}
		if bytes.Equal(stored[name], local[name]) {
			continue
		}
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

// storeHashed returns the hash the store keeps for a Hashed file, given its row: a row that an
// older hub stored in clear, or sealed, is replaced by its hash first.
func storeHashed(ctx context.Context, st SharedStore, id Identity, key []byte, name string, row []byte) ([]byte, error) {
	data := row
	if isSealed(data) {
		var err error
		if data, err = unseal(key, name, data); err != nil {
			return nil, err
		}
	}
	sum, err := id.Hash(data)
	if err != nil {
		return nil, fmt.Errorf("shared identity: the stored %s: %w", name, err)
	}
	if !bytes.Equal(sum, row) {
		if err := st.PutSharedFile(ctx, name, sum); err != nil {
			return nil, fmt.Errorf("shared identity: store the hash of %s: %w", name, err)
		}
	}
	return sum, nil
}

// ReplaceShared stores data as the shared file name, for every replica, and tells the running
// replicas (EventIdentity) so that they take it at once: how a rotated admin token's hash
// reaches them.
func ReplaceShared(ctx context.Context, st SharedStore, sender, name string, data []byte) error {
	if err := st.PutSharedFile(ctx, name, data); err != nil {
		return fmt.Errorf("store the shared %s: %w", name, err)
	}
	payload, err := json.Marshal(Event{Replica: sender, Kind: EventIdentity})
	if err != nil {
		return err
	}
	if err := st.Publish(ctx, string(payload)); err != nil {
		return fmt.Errorf("stored the shared %s, but could not tell the running replicas (they take it at their next start or reconnect): %w", name, err)
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
