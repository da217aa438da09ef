package replica

import (
	"bytes"
	"context"
	"fmt"
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
}

// shareIdentity makes this replica's identity files those of the shared store. The first
// replica to start (or a hub that moved from SQLite to PostgreSQL) stores its own; every later
// one writes the stored ones into its data dir. A data dir that already holds different ones
// is refused rather than overwritten: agents that trust its CA would be locked out.
//
// The CA key is then in the database: whoever can read the database can sign agent
// certificates. docs/ha.md says so.
func shareIdentity(ctx context.Context, st SharedStore, id Identity) error {
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
	stored, err := st.ShareFiles(ctx, local)
	if err != nil {
		return err
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
