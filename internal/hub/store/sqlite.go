package store

import (
	"cmp"
	"context"
	"database/sql"
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
	sqlStore // db: one connection, BEGIN IMMEDIATE; ro: query_only connections
}

var _ Store = (*SQLite)(nil)

var sqliteDialect = dialect{
	table: `
CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`,
	record:       `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
	step:         func(m migration) string { return m.sql },
	time:         func(t time.Time) any { return toNanos(t) },
	nullTime:     func(t time.Time) any { return nullNanos(t) },
	instant:      func(now time.Time) any { return toNanos(now) },
	compareTimes: func(a, b time.Time) int { return cmp.Compare(toNanos(a), toNanos(b)) },
	putStatuses:  sqlitePutStatuses,
}

// OpenSQLite opens the store in the SQLite file at path, creating the file if it does not
// exist, and brings its schema up to date. It refuses a file written by a newer hub (one
// whose schema has migrations this hub does not know). path names a file; ":memory:" is not
// supported, because the read and write pools must share one database.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	return openSQLite(ctx, path, migrations)
}

func openSQLite(ctx context.Context, path string, migs []migration) (*SQLite, error) {
	db, err := sqlitedb.Open(ctx, path, []string{"foreign_keys(1)"}, func(ctx context.Context, w *sql.DB) error {
		return migrate(ctx, w, migs, &sqliteDialect)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	return &SQLite{sqlStore{db: db.W, ro: db.R, d: &sqliteDialect, now: time.Now}}, nil
}

// sqlitePutStatuses upserts statuses one statement each, prepared once: SQLite runs them in
// process, so there is no round trip to save. The placeholders are plain ? here: the driver
// binds those by position without reading the parameter's name, which for $n costs an
// allocation per parameter, 14 per status.
func sqlitePutStatuses(ctx context.Context, tx *sql.Tx, cluster string, statuses []AssignmentStatus, now any) error {
	stmt, err := tx.PrepareContext(ctx, statusColumnList+
		`VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`+statusConflict+
		`WHERE excluded.reported_at >= statuses.reported_at`)
	if err != nil {
		return err
	}
	defer func() { _ = stmt.Close() }() // the statements' own errors are checked
	for _, st := range statuses {
		if _, err := stmt.ExecContext(ctx, cluster, st.Release, st.ObservedGeneration,
			st.Revision, st.Digest, st.Phase, st.Health, st.Objects, st.Drifted, st.Conflicts,
			st.Error, st.Detail, toNanos(st.ReportedAt), now); err != nil {
			return fmt.Errorf("release %q: %w", st.Release, err)
		}
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
