package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	// Registers the pure-Go "sqlite" driver.

	"github.com/flotilla/flotilla/internal/sqlitedb"
)

// Event is one change: who (Actor) did what (Action) to which cluster and release, when, with
// the particulars in Detail.
type Event struct {
	// Time is when it happened; Append stamps the current time when it is zero. Kept in UTC
	// with nanosecond precision.
	Time time.Time `json:"time"`
	// Actor is who did it: "token:<name>" or "oidc:<subject>" (the user API; Detail["role"]
	// holds the role used), "agent:<cluster>" or "hub".
	Actor string `json:"actor"`
	// Action is what happened: cluster.added, cluster.relabelled, cluster.removed,
	// token.issued, token.used, fleet.revision, source.revision, apply, apply.verified,
	// release.removed, drift.healed, api.call.
	Action  string `json:"action"`
	Cluster string `json:"cluster,omitempty"`
	Release string `json:"release,omitempty"`
	// Detail holds the particulars. It must encode as JSON; it is stored (and hashed) as
	// canonical JSON, so it reads back with JSON's types (numbers as float64).
	Detail map[string]any `json:"detail,omitempty"`
}

// Record is an Event as stored: its place in the chain and its hashes.
type Record struct {
	Seq int64 `json:"seq"`
	Event
	PrevHash string `json:"prevHash"`
	Hash     string `json:"hash"`
}

// Log is an append-only audit log in one SQLite file.
type Log struct {
	w   *sql.DB // one connection, BEGIN IMMEDIATE
	r   *sql.DB // query_only connections
	now func() time.Time
}

const schema = `
CREATE TABLE IF NOT EXISTS records (
	seq       INTEGER PRIMARY KEY,
	time      INTEGER NOT NULL,
	actor     TEXT NOT NULL,
	action    TEXT NOT NULL,
	cluster   TEXT NOT NULL,
	release   TEXT NOT NULL,
	detail    TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS records_by_time ON records (time);
CREATE INDEX IF NOT EXISTS records_by_cluster ON records (cluster, seq);
-- The last record appended, updated in the same transaction: a deleted tail shows as a head
-- that names a record which is not there.
CREATE TABLE IF NOT EXISTS head (
	id   INTEGER PRIMARY KEY CHECK (id = 1),
	seq  INTEGER NOT NULL,
	hash TEXT NOT NULL
) STRICT;
`

// Open opens the audit log in the SQLite file at path, creating it if it does not exist.
func Open(ctx context.Context, path string) (*Log, error) {
	db, err := sqlitedb.Open(ctx, path, nil, func(ctx context.Context, w *sql.DB) error {
		_, err := w.ExecContext(ctx, schema)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return &Log{w: db.W, r: db.R, now: time.Now}, nil
}

// Close closes the log's connections.
func (l *Log) Close() error {
	return errors.Join(l.r.Close(), l.w.Close())
}
