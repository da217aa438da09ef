// Package sqlitedb opens an SQLite file the way the hub's stores use it: one writer
// connection and a pool of read-only connections, in WAL mode, with fsync on every commit.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	// Registers the pure-Go "sqlite" driver: the hub stays a static binary without cgo.
	_ "modernc.org/sqlite"
)

// busyTimeout is how long a connection waits for a lock another process holds (a second hub,
// the sqlite3 shell) before failing with SQLITE_BUSY. Inside one process writes never wait for
// each other at the SQLite level: they queue on the single writer connection instead.
const busyTimeout = 10 * time.Second

// DB is an open SQLite file.
//
// W is a pool of exactly one connection (transactions BEGIN IMMEDIATE), so the process's
// own writers queue in database/sql rather than racing for SQLite's write lock. R is a pool of
// query_only connections which, in WAL mode, run alongside the writer and see the last commit.
type DB struct {
	W, R *sql.DB
}

// Open opens (creating if needed) the SQLite file at path. pragmas are added to both pools
// (e.g. "foreign_keys(1)"). init runs on the writer before any reader connects, so readers
// never see a half-built schema. path must name a file: ":memory:" cannot be shared by the
// two pools.
func Open(ctx context.Context, path string, pragmas []string, init func(context.Context, *sql.DB) error) (*DB, error) {
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("sqlite file %q: a file path is required", path)
	}
	params := func(extra ...string) []string {
		out := append([]string{}, extra...)
		for _, p := range pragmas {
			out = append(out, "_pragma="+p)
		}
		return out
	}
	w, err := sql.Open("sqlite", DSN(path, params(
		"_txlock=immediate",
		"_pragma=journal_mode(WAL)",
		// FULL (the default, stated so nobody lowers it unknowingly): a commit the process
		// acknowledged survives a power cut.
		"_pragma=synchronous(FULL)",
	)...))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close() // already failing: the first error is the one returned
		return nil, err
	}
	if init != nil {
		if err := init(ctx, w); err != nil {
			_ = w.Close() // already failing: the first error is the one returned
			return nil, err
		}
	}
	r, err := sql.Open("sqlite", DSN(path, params("_pragma=query_only(1)")...))
	if err != nil {
		_ = w.Close() // already failing: the first error is the one returned
		return nil, err
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		_ = r.Close() // already failing: the first error is the one returned
		_ = w.Close() // already failing: the first error is the one returned
		return nil, err
	}
	return &DB{W: w, R: r}, nil
}

// Close closes both pools.
func (d *DB) Close() error {
	return errors.Join(d.R.Close(), d.W.Close())
}

// DSN builds a file: URI (the busy timeout always included), so that a path containing '?' or '#' is not cut short.
func DSN(path string, params ...string) string {
	u := url.URL{Scheme: "file", Path: path, OmitHost: true}
	q := fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())
	for _, p := range params {
		q += "&" + p
	}
	u.RawQuery = q
	return u.String()
}
