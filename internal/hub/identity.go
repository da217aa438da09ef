package hub

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flotilla/flotilla/internal/pki"
)

// sharedIdentityFiles are the files of the data dir every replica must hold alike: agents
// trust one CA and present certificates it signed to whichever replica they reach, and users
// hold one admin token.
var sharedIdentityFiles = []string{pki.CACertFile, pki.CAKeyFile, AdminTokenFile}

// shareIdentity makes this replica's CA and admin token those of the shared store. The first
// replica to start (or a hub that moved from SQLite to PostgreSQL) stores its own; every later
// one writes the stored ones into its data dir. A data dir that already holds different ones
// is refused rather than overwritten: agents that trust its CA would be locked out.
//
// The CA key is then in the database: whoever can read the database can sign agent
// certificates. docs/ha.md says so.
func shareIdentity(ctx context.Context, st sharedStore, dataDir string, now time.Time) error {
	// Make sure this data dir has a CA and a token (its own, or newly created), then offer
	// them: the store keeps the first offer and returns what it keeps.
	existed := map[string]bool{}
	for _, name := range sharedIdentityFiles {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			existed[name] = true
		}
	}
	if _, err := pki.LoadOrCreateCA(dataDir, now); err != nil {
		return err
	}
	if _, err := loadOrCreateToken(filepath.Join(dataDir, AdminTokenFile)); err != nil {
		return err
	}
	local := map[string][]byte{}
	for _, name := range sharedIdentityFiles {
		data, err := os.ReadFile(filepath.Join(dataDir, name))
		if err != nil {
			return fmt.Errorf("shared identity: %w", err)
		}
		local[name] = data
	}
	stored, err := st.ShareFiles(ctx, local)
	if err != nil {
		return err
	}
	for _, name := range sharedIdentityFiles {
		if bytes.Equal(stored[name], local[name]) {
			continue
		}
		path := filepath.Join(dataDir, name)
		if existed[name] {
			return fmt.Errorf("%s differs from the %s the other hub replicas share through the store: "+
				"this data dir belonged to another hub; move %s aside (and %s, %s) to use the shared ones",
				path, name, path, pki.CAKeyFile, AdminTokenFile)
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
