// Package storecopy copies a hub's SQLite store into PostgreSQL (`flotilla hub copy-store`),
// for a hub that moves to several replicas.
package storecopy

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// Stats counts the rows copied, by table.
type Stats map[string]int64

// ToPostgres copies every row of the SQLite store src into the PostgreSQL store dst, in
// one transaction: a hub moving from SQLite to PostgreSQL (to run several replicas) keeps its
// clusters, tokens, certificates, desired states with their generations, statuses and report
// accounting, so agents carry on as if the hub had restarted. dst must hold no hub state yet;
// src must not be in use by a running hub (stop it first), or the copy may miss its last
// writes. Both stores are at this hub's schema version, since opening them migrates them.
// Times keep microseconds, the precision of PostgreSQL (and of the store contract).
func ToPostgres(ctx context.Context, src *store.SQLite, dst *store.Postgres) (Stats, error) {
	conn, err := dst.DB().Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy to postgres store %s: %w", dst, err)
	}
	defer func() { _ = conn.Close() }() // returns the connection to the pool
	stats := Stats{}
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
		// Parents before children, for the foreign keys.
		for _, t := range copyTables {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+t.name).Scan(&n); err != nil {
				return fmt.Errorf("table %s: %w", t.name, err)
			}
			if n > 0 {
				return fmt.Errorf("table %s already holds %d rows: copy only into a database no hub has used", t.name, n)
			}
			rows, err := readRows(ctx, src.DB(), t)
			if err != nil {
				return fmt.Errorf("table %s: read: %w", t.name, err)
			}
			copied, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.names(), pgx.CopyFromRows(rows))
			if err != nil {
				return fmt.Errorf("table %s: write: %w", t.name, err)
			}
			stats[t.name] = copied
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("copy to postgres store %s: %w", dst, err)
	}
	return stats, nil
}

// copyTable is one table: its columns, the same in both databases, and what each holds.
type copyTable struct {
	name    string
	columns []copyColumn
}

type copyColumn struct {
	name string
	kind columnKind
}

// columnKind is how a column is stored in SQLite and what it becomes in PostgreSQL (see the
// conventions in the store's migrations.go).
type columnKind int

const (
	colText        columnKind = iota // TEXT in both
	colBlob                          // BLOB to BYTEA; NULL to empty where the column is NOT NULL
	colInt                           // INTEGER to BIGINT
	colBool                          // 0/1 to BOOLEAN
	colTimeOrNull                    // nanoseconds to an instant, 0 to NULL
	colTimeNotNull                   // nanoseconds to an instant, 0 to the epoch
	colNullTime                      // nanoseconds or NULL to an instant or NULL
	colRawBlob                       // BLOB to BYTEA, NULL kept
)

func (k columnKind) dest() any {
	switch k {
	case colText:
		return new(string)
	case colBlob, colRawBlob:
		return new([]byte)
	case colNullTime:
		return new(sql.NullInt64)
	default:
		return new(int64)
	}
}

func (k columnKind) value(d any) any {
	switch k {
	case colText:
		return *d.(*string)
	case colBlob:
		return notNil(*d.(*[]byte))
	case colRawBlob:
		return *d.(*[]byte)
	case colInt:
		return *d.(*int64)
	case colBool:
		return *d.(*int64) != 0
	case colTimeOrNull:
		return pgTime(fromNanos(*d.(*int64)))
	case colTimeNotNull:
		if n := *d.(*int64); n != 0 {
			return fromNanos(n)
		}
		return time.Unix(0, 0).UTC()
	default: // nullTime
		return pgTime(fromNullNanos(*d.(*sql.NullInt64)))
	}
}

func (t copyTable) names() []string {
	out := make([]string, len(t.columns))
	for i, c := range t.columns {
		out[i] = c.name
	}
	return out
}

func readRows(ctx context.Context, db *sql.DB, t copyTable) ([][]any, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+strings.Join(t.names(), ", ")+` FROM `+t.name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		d := make([]any, len(t.columns))
		for i, c := range t.columns {
			d[i] = c.kind.dest()
		}
		if err := rows.Scan(d...); err != nil {
			return nil, err
		}
		for i, c := range t.columns {
			d[i] = c.kind.value(d[i])
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Tables names the tables ToPostgres copies (a test checks it against the schema).
func Tables() map[string]bool {
	out := map[string]bool{}
	for _, t := range copyTables {
		out[t.name] = true
	}
	return out
}

// copyTables are every table, parents before children for the foreign keys.
var copyTables = []copyTable{
	{"clusters", []copyColumn{{"name", colText}, {"labels", colText}, {"created_at", colTimeOrNull}, {"last_seen", colTimeOrNull}, {"agent_version", colText}}},
	{"join_tokens", []copyColumn{{"id", colText}, {"secret_hash", colBlob}, {"cluster", colText}, {"expires_at", colTimeOrNull}, {"used_at", colNullTime}}},
	{"certificates", []copyColumn{{"serial", colText}, {"cluster", colText}, {"not_after", colTimeOrNull}, {"revoked", colBool}}},
	{"desired_states", []copyColumn{{"cluster", colText}, {"generation", colInt}, {"document", colBlob}, {"updated_at", colTimeNotNull}}},
	{"reports", []copyColumn{{"cluster", colText}, {"seq", colInt}, {"ingested_at", colTimeNotNull}}},
	{"statuses", []copyColumn{
		{"cluster", colText}, {"release", colText}, {"observed_generation", colInt}, {"revision", colText}, {"digest", colText},
		{"phase", colText}, {"health", colText}, {"objects", colInt}, {"drifted", colBool}, {"conflicts", colInt},
		{"error", colText}, {"detail", colRawBlob}, {"reported_at", colTimeOrNull}, {"updated_at", colTimeNotNull},
	}},
	{"source_statuses", []copyColumn{{"name", colText}, {"url", colText}, {"revision", colText}, {"digest", colText}, {"error", colText}, {"checked_at", colTimeOrNull}}},
	{"fleet_status", []copyColumn{{"id", colInt}, {"revision", colText}, {"error", colText}, {"updated_at", colTimeOrNull}}},
	{"compactions", []copyColumn{{"cluster", colText}, {"seq", colInt}, {"reports", colInt}}},
	{"audit_checkpoints", []copyColumn{
		{"cluster", colText}, {"release", colText}, {"revision", colText}, {"digest", colText}, {"phase", colText}, {"health", colText},
		{"since", colTimeOrNull}, {"chained_at", colTimeOrNull}, {"first_verified", colTimeOrNull}, {"last_verified", colTimeOrNull}, {"checks", colInt},
	}},
	{"records", []copyColumn{{"kind", colText}, {"key", colText}, {"data", colBlob}, {"version", colInt}, {"updated_at", colTimeNotNull}}},
}

// The store's conventions (store/sqlite.go, store/postgres.go), for the values copied.

// fromNanos is a SQLite time column's value: unix nanoseconds, 0 for the zero time.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// fromNullNanos is fromNanos of a column where NULL is "not yet".
func fromNullNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

// pgTime is a PostgreSQL time column's value for t: NULL for the zero time.
func pgTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// notNil makes a nil slice an empty one, for NOT NULL BLOB columns.
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
