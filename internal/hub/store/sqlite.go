package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flotilla/flotilla/internal/sqlitedb"
)

// SQLite is the Store kept in one SQLite file, the hub's embedded default.
//
// Writes go through a pool of exactly one connection, so the hub's own writers queue in
// database/sql rather than racing for SQLite's write lock; reads use a separate pool of
// read-only connections which, in WAL mode, run alongside the writer and see the last commit.
type SQLite struct {
	w *sql.DB // one connection, BEGIN IMMEDIATE
	r *sql.DB // query_only connections
	// now stamps the times the store itself records (UpdatedAt, ingestion time); tests in
	// this package replace it.
	now func() time.Time
}

var _ Store = (*SQLite)(nil)

// OpenSQLite opens the store in the SQLite file at path, creating the file if it does not
// exist, and brings its schema up to date. It refuses a file written by a newer hub (one
// whose schema has migrations this hub does not know). path names a file; ":memory:" is not
// supported, because the read and write pools must share one database.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	return openSQLite(ctx, path, migrations)
}

func openSQLite(ctx context.Context, path string, migs []migration) (*SQLite, error) {
	db, err := sqlitedb.Open(ctx, path, []string{"foreign_keys(1)"}, func(ctx context.Context, w *sql.DB) error {
		return migrate(ctx, w, migs, sqliteDialect)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	return &SQLite{w: db.W, r: db.R, now: time.Now}, nil
}

// Close closes both connection pools.
func (s *SQLite) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// inTx runs fn in a write transaction and commits it if fn returns nil.
func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, rollback(tx))
	}
	return tx.Commit()
}

// rollback rolls tx back, ignoring the error of a transaction that already ended.
func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// Times are stored as INTEGER unix nanoseconds (UTC by definition, ordered as numbers), with
// 0 for the zero time. Times outside what int64 nanoseconds hold (before 1678 or after 2262)
// are clamped to its limits: they keep their order, which is all the store compares.
func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nullNanos stores the zero time as NULL, for columns where "not yet" is a condition in SQL.
func nullNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: toNanos(t), Valid: true}
}

func fromNullNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

// notNil makes a nil slice an empty one, for NOT NULL BLOB columns (the driver binds nil as
// NULL).
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// requireCluster returns ErrNotFound unless the named cluster is registered, inside tx.
func requireCluster(ctx context.Context, tx *sql.Tx, name string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM clusters WHERE name = ?`, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("cluster not registered: %w", ErrNotFound)
	}
	return err
}
