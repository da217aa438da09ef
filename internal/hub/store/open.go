package store

import (
	"context"
	"fmt"
	"net/url"
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

// DefaultPassword is the password an older deploy/hub-ha shipped: a hub refuses it, since
// everyone who read the manifests knows it.
const DefaultPassword = "change-me"

// CheckPassword refuses a PostgreSQL location whose password, in the URL or in pgPassword
// (libpq's PGPASSWORD, which fills in a URL without one), is DefaultPassword.
func CheckPassword(location, pgPassword string) error {
	if !strings.HasPrefix(location, "postgres://") && !strings.HasPrefix(location, "postgresql://") {
		return nil
	}
	pw := pgPassword
	if u, err := url.Parse(location); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			pw = p
		}
	}
	if pw == DefaultPassword {
		return fmt.Errorf("store %s: the PostgreSQL password is %q, the example one everyone knows: "+
			"set a password of your own (docs/ha.md)", redactLocation(location), DefaultPassword)
	}
	return nil
}

// redactLocation keeps an unknown location's scheme only: it may hold a password.
func redactLocation(location string) string {
	if scheme, _, ok := strings.Cut(location, "://"); ok {
		return scheme + "://..."
	}
	return "..."
}
