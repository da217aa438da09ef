package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// CopyStats counts the rows copied, by table.
type CopyStats map[string]int64

// CopyToPostgres copies every row of the SQLite store src into the PostgreSQL store dst, in
// one transaction: a hub moving from SQLite to PostgreSQL (to run several replicas) keeps its
// clusters, tokens, certificates, desired states with their generations, statuses and report
// accounting, so agents carry on as if the hub had restarted. dst must hold no hub state yet;
// src must not be in use by a running hub (stop it first), or the copy may miss its last
// writes. Both stores are at this hub's schema version, since opening them migrates them.
// Times keep microseconds, the precision of PostgreSQL (and of the store contract).
func CopyToPostgres(ctx context.Context, src *SQLite, dst *Postgres) (CopyStats, error) {
	conn, err := dst.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy to postgres store %s: %w", dst.where, err)
	}
	defer conn.Close()
	stats := CopyStats{}
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
			rows, err := readRows(ctx, src.ro, t)
			if err != nil {
				return fmt.Errorf("table %s: read: %w", t.name, err)
			}
			copied, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.pgColumns, pgx.CopyFromRows(rows))
			if err != nil {
				return fmt.Errorf("table %s: write: %w", t.name, err)
			}
			stats[t.name] = copied
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("copy to postgres store %s: %w", dst.where, err)
	}
	return stats, nil
}

// copyTable says how to read one table from SQLite and what the rows become in PostgreSQL.
type copyTable struct {
	name      string
	query     string   // SQLite SELECT, columns in pgColumns' order
	pgColumns []string // PostgreSQL columns
	// dest returns fresh scan destinations; row turns them into PostgreSQL values.
	dest func() []any
	row  func(d []any) []any
}

func readRows(ctx context.Context, db *sql.DB, t copyTable) ([][]any, error) {
	rows, err := db.QueryContext(ctx, t.query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		d := t.dest()
		if err := rows.Scan(d...); err != nil {
			return nil, err
		}
		out = append(out, t.row(d))
	}
	return out, rows.Err()
}

// Conversions from SQLite's column types to PostgreSQL's (see the conventions in
// migrations.go): nanoseconds to instants (0 or NULL to NULL where the column allows it),
// 0/1 to booleans.
func nanosOrNull(n int64) any { return pgTime(fromNanos(n)) }
func nanosNotNull(n int64) time.Time {
	if n == 0 {
		return time.Unix(0, 0).UTC()
	}
	return fromNanos(n)
}
func nullNanosOrNull(n sql.NullInt64) any { return pgTime(fromNullNanos(n)) }

func val[T any](d []any, i int) T { return *d[i].(*T) }

var copyTables = []copyTable{
	{
		name:      "clusters",
		query:     `SELECT name, labels, created_at, last_seen, agent_version FROM clusters`,
		pgColumns: []string{"name", "labels", "created_at", "last_seen", "agent_version"},
		dest: func() []any {
			return []any{new(string), new(string), new(int64), new(int64), new(string)}
		},
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[string](d, 1), nanosOrNull(val[int64](d, 2)), nanosOrNull(val[int64](d, 3)), val[string](d, 4)}
		},
	},
	{
		name:      "join_tokens",
		query:     `SELECT id, secret_hash, cluster, expires_at, used_at FROM join_tokens`,
		pgColumns: []string{"id", "secret_hash", "cluster", "expires_at", "used_at"},
		dest: func() []any {
			return []any{new(string), new([]byte), new(string), new(int64), new(sql.NullInt64)}
		},
		row: func(d []any) []any {
			return []any{val[string](d, 0), notNil(val[[]byte](d, 1)), val[string](d, 2), nanosOrNull(val[int64](d, 3)), nullNanosOrNull(val[sql.NullInt64](d, 4))}
		},
	},
	{
		name:      "certificates",
		query:     `SELECT serial, cluster, not_after, revoked FROM certificates`,
		pgColumns: []string{"serial", "cluster", "not_after", "revoked"},
		dest:      func() []any { return []any{new(string), new(string), new(int64), new(int64)} },
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[string](d, 1), nanosOrNull(val[int64](d, 2)), val[int64](d, 3) != 0}
		},
	},
	{
		name:      "desired_states",
		query:     `SELECT cluster, generation, document, updated_at FROM desired_states`,
		pgColumns: []string{"cluster", "generation", "document", "updated_at"},
		dest:      func() []any { return []any{new(string), new(int64), new([]byte), new(int64)} },
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[int64](d, 1), notNil(val[[]byte](d, 2)), nanosNotNull(val[int64](d, 3))}
		},
	},
	{
		name:      "reports",
		query:     `SELECT cluster, seq, ingested_at FROM reports`,
		pgColumns: []string{"cluster", "seq", "ingested_at"},
		dest:      func() []any { return []any{new(string), new(int64), new(int64)} },
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[int64](d, 1), nanosNotNull(val[int64](d, 2))}
		},
	},
	{
		name: "statuses",
		query: `SELECT cluster, release, observed_generation, revision, digest, phase, health, objects,
	drifted, conflicts, error, detail, reported_at, updated_at FROM statuses`,
		pgColumns: []string{"cluster", "release", "observed_generation", "revision", "digest", "phase", "health",
			"objects", "drifted", "conflicts", "error", "detail", "reported_at", "updated_at"},
		dest: func() []any {
			return []any{new(string), new(string), new(int64), new(string), new(string), new(string), new(string),
				new(int64), new(int64), new(int64), new(string), new([]byte), new(int64), new(int64)}
		},
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[string](d, 1), val[int64](d, 2), val[string](d, 3), val[string](d, 4),
				val[string](d, 5), val[string](d, 6), val[int64](d, 7), val[int64](d, 8) != 0, val[int64](d, 9),
				val[string](d, 10), val[[]byte](d, 11), nanosOrNull(val[int64](d, 12)), nanosNotNull(val[int64](d, 13))}
		},
	},
	{
		name:      "source_statuses",
		query:     `SELECT name, url, revision, digest, error, checked_at FROM source_statuses`,
		pgColumns: []string{"name", "url", "revision", "digest", "error", "checked_at"},
		dest: func() []any {
			return []any{new(string), new(string), new(string), new(string), new(string), new(int64)}
		},
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[string](d, 1), val[string](d, 2), val[string](d, 3), val[string](d, 4), nanosOrNull(val[int64](d, 5))}
		},
	},
	{
		name:      "fleet_status",
		query:     `SELECT id, revision, error, updated_at FROM fleet_status`,
		pgColumns: []string{"id", "revision", "error", "updated_at"},
		dest:      func() []any { return []any{new(int64), new(string), new(string), new(int64)} },
		row: func(d []any) []any {
			return []any{val[int64](d, 0), val[string](d, 1), val[string](d, 2), nanosOrNull(val[int64](d, 3))}
		},
	},
	{
		name:      "compactions",
		query:     `SELECT cluster, seq, reports FROM compactions`,
		pgColumns: []string{"cluster", "seq", "reports"},
		dest:      func() []any { return []any{new(string), new(int64), new(int64)} },
		row: func(d []any) []any {
			return []any{val[string](d, 0), val[int64](d, 1), val[int64](d, 2)}
		},
	},
}
