package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// SQLiteFile is the name of the SQLite store in the hub's data dir.
const SQLiteFile = "hub.db"

// Open opens the store location names: "" for SQLite in dataDir (the default), a
// postgres:// or postgresql:// URL for PostgreSQL.
func Open(ctx context.Context, location, dataDir string) (Store, error) {
	switch {
	case location == "":
		return OpenSQLite(ctx, filepath.Join(dataDir, SQLiteFile))
	case strings.HasPrefix(location, "postgres://"), strings.HasPrefix(location, "postgresql://"):
		return OpenPostgres(ctx, location, PostgresOptions{})
	}
	return nil, fmt.Errorf("store %q: want a postgres:// URL, or nothing for SQLite in the data dir", redactLocation(location))
}

// redactLocation keeps an unknown location's scheme only: it may hold a password.
func redactLocation(location string) string {
	if scheme, _, ok := strings.Cut(location, "://"); ok {
		return scheme + "://..."
	}
	return "..."
}
