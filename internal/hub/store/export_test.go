package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SchemaVersion is the number of migrations this hub knows.
var SchemaVersion = len(migrations)

// OpenSQLiteWithExtraMigrations opens path as a newer hub would: with the known migrations
// followed by the extra SQL steps.
func OpenSQLiteWithExtraMigrations(ctx context.Context, path string, extra ...string) (*SQLite, error) {
	migs := append([]migration(nil), migrations...)
	for _, sql := range extra {
		migs = append(migs, migration{name: "test step", sql: sql})
	}
	return openSQLite(ctx, path, migs)
}

// OpenSQLiteAtVersion opens path as an older hub would, knowing only the first n migrations.
func OpenSQLiteAtVersion(ctx context.Context, path string, n int) (*SQLite, error) {
	return openSQLite(ctx, path, migrations[:n])
}

// SetNow replaces the clock the store stamps UpdatedAt and ingestion times with.
func (s *SQLite) SetNow(now func() time.Time) { s.now = now }

// Pools returns the writer and reader connection pools.
func (s *SQLite) Pools() (w, r *sql.DB) { return s.db, s.ro }

// LeaseHolder returns who holds lease name and until when; "" if nobody does or it expired.
func (s *Postgres) LeaseHolder(ctx context.Context, name string) (holder string, until time.Time, err error) {
	err = s.db.QueryRowContext(ctx, `
SELECT holder, expires_at FROM leases WHERE name = $1 AND expires_at >= now()`, name).Scan(&holder, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("lease %q: %w", name, err)
	}
	return holder, until.UTC(), nil
}
