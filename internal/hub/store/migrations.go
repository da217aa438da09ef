package store

import (
	"context"
	"database/sql"
	_ "embed" // the texts of the later steps
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migration is one step of the schema, written once for each database: both stores have the
// same steps, with the same versions and names, so a hub of a given version has the same tables
// whichever store it runs on. Steps are applied in order and recorded in schema_migrations by
// version, which is the step's position in the list counted from 1. Released steps are never
// edited or reordered (the SQLite text least of all: existing hub.db files recorded it): a
// change to the schema is a new step at the end, with both texts, so that every database,
// however old, reaches the same schema.
type migration struct {
	name     string
	sql      string // SQLite
	postgres string // PostgreSQL
}

// migrations is the schema, oldest step first.
//
// SQLite conventions: tables are STRICT, so a value of the wrong type is an error rather than
// silently stored; times are INTEGER unix nanoseconds, 0 for the zero time (NULL where "not
// yet" is tested in SQL); labels are a JSON object in TEXT.
//
// PostgreSQL conventions: the same tables and keys; times are timestamptz (microseconds, the
// precision the store contract promises), NULL where "not yet" is tested in SQL; labels are
// JSONB; report seqs are BIGINT holding the uint64's bits, as in SQLite.
var migrations = []migration{
	{name: "initial schema", postgres: postgresInitialSchema, sql: `
CREATE TABLE clusters (
	name          TEXT PRIMARY KEY,
	labels        TEXT NOT NULL,
	created_at    INTEGER NOT NULL,
	last_seen     INTEGER NOT NULL DEFAULT 0,
	agent_version TEXT NOT NULL DEFAULT ''
) STRICT;

-- No foreign key to clusters: a token may be issued before its cluster registers.
CREATE TABLE join_tokens (
	id          TEXT PRIMARY KEY,
	secret_hash BLOB NOT NULL,
	cluster     TEXT NOT NULL,
	expires_at  INTEGER NOT NULL,
	used_at     INTEGER
) STRICT;
CREATE INDEX join_tokens_by_cluster ON join_tokens (cluster);

-- No foreign key to clusters: certificates outlive their cluster, revoked, so that a
-- removed cluster's agent stays locked out.
CREATE TABLE certificates (
	serial    TEXT PRIMARY KEY,
	cluster   TEXT NOT NULL,
	not_after INTEGER NOT NULL,
	revoked   INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
) STRICT;
CREATE INDEX certificates_by_cluster ON certificates (cluster);

CREATE TABLE desired_states (
	cluster    TEXT PRIMARY KEY REFERENCES clusters (name),
	generation INTEGER NOT NULL CHECK (generation > 0),
	document   BLOB NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

-- One row per ingested report: the primary key is what makes ingestion idempotent.
CREATE TABLE reports (
	cluster     TEXT NOT NULL REFERENCES clusters (name),
	seq         INTEGER NOT NULL,
	ingested_at INTEGER NOT NULL,
	PRIMARY KEY (cluster, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE statuses (
	cluster             TEXT NOT NULL REFERENCES clusters (name),
	release             TEXT NOT NULL,
	observed_generation INTEGER NOT NULL,
	revision            TEXT NOT NULL,
	digest              TEXT NOT NULL,
	phase               TEXT NOT NULL,
	health              TEXT NOT NULL,
	objects             INTEGER NOT NULL,
	drifted             INTEGER NOT NULL CHECK (drifted IN (0, 1)),
	conflicts           INTEGER NOT NULL,
	error               TEXT NOT NULL,
	detail              BLOB,
	reported_at         INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	PRIMARY KEY (cluster, release)
) STRICT, WITHOUT ROWID;

CREATE TABLE source_statuses (
	name       TEXT PRIMARY KEY,
	url        TEXT NOT NULL,
	revision   TEXT NOT NULL,
	digest     TEXT NOT NULL,
	error      TEXT NOT NULL,
	checked_at INTEGER NOT NULL
) STRICT;

-- A single row (id 1) once the fleet status is first set.
CREATE TABLE fleet_status (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	revision   TEXT NOT NULL,
	error      TEXT NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
`},
	{name: "compacted reports", postgres: postgresCompactions, sql: `
-- Reports an agent's bounded outbox dropped before it could send them, as the agent said with
-- the report seq that carried the count: keyed by (cluster, seq) so a resent report counts once.
CREATE TABLE compactions (
	cluster TEXT NOT NULL REFERENCES clusters (name),
	seq     INTEGER NOT NULL,
	reports INTEGER NOT NULL CHECK (reports > 0),
	PRIMARY KEY (cluster, seq)
) STRICT, WITHOUT ROWID;
`},
	// A SQLite hub is a single replica: it holds every lease, keeps artifacts on its disk and
	// its CA in its data dir, so the tables replicas share exist only in PostgreSQL.
	{name: "replicated hubs", postgres: postgresReplication, sql: `SELECT 1;`},
	{name: "audit checkpoints", postgres: postgresAuditCheckpoints, sql: sqliteAuditCheckpoints},
	{name: "records", postgres: postgresRecords, sql: sqliteRecords},
	{name: "statuses by release", postgres: statusesByRelease, sql: statusesByRelease},
}

// The index is the same text in both.
//
//go:embed schema/6_statuses_by_release.sqlite.sql
var statusesByRelease string

// The SQLite texts of the steps after the third are files under schema/, as the PostgreSQL
// texts of every step are.
//
//go:embed schema/4_audit_checkpoints.sqlite.sql
var sqliteAuditCheckpoints string

//go:embed schema/5_records.sqlite.sql
var sqliteRecords string

// migrate brings the schema of db up to migs, all steps in one transaction: a step that fails
// leaves the database as it was. It refuses a database that records versions beyond migs,
// because a newer hub wrote it and this one would misread or damage its data.
func migrate(ctx context.Context, db *sql.DB, migs []migration, d *dialect) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("schema migration: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed

	if d.lock != "" {
		if _, err := tx.ExecContext(ctx, d.lock); err != nil {
			return fmt.Errorf("schema migration: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, d.table); err != nil {
		return fmt.Errorf("schema migration: %w", err)
	}

	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return fmt.Errorf("schema migration: %w", err)
	}
	var unknown []string
	for _, v := range slices.Sorted(maps.Keys(applied)) {
		if v < 1 || v > len(migs) {
			unknown = append(unknown, strconv.Itoa(v))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("schema has migration(s) %s unknown to this hub, which knows 1 to %d: "+
			"the database was written by a newer flotilla; run that version or restore a backup",
			strings.Join(unknown, ", "), len(migs))
	}

	now := d.time(time.Now())
	for i, m := range migs {
		v := i + 1
		if applied[v] {
			continue
		}
		if _, err := tx.ExecContext(ctx, d.step(m)); err != nil {
			return fmt.Errorf("schema migration %d (%s): %w", v, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, d.record, v, m.name, now); err != nil {
			return fmt.Errorf("schema migration %d (%s): %w", v, m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("schema migration: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}
