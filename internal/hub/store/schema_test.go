package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/pgtest"
)

// tableShape is what the SQLite and PostgreSQL texts of the migrations must agree on: the
// one SQL implementation of the store reads and writes both by the same names.
type tableShape struct {
	Columns     []string // in order
	PrimaryKey  []string // in key order
	ForeignKeys []string // "column -> table(column)", sorted
	Indexes     []string // "name(columns)" of the indexes created by name, sorted
}

// postgresOnlyTables are the tables replicas share, which a SQLite hub (a single replica)
// does without.
var postgresOnlyTables = []string{"artifacts", "leases", "shared_files"}

func TestSchemasAgree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sq := openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
	defer sq.Close()
	pg := openPostgres(t, pgtest.NewDatabase(t))
	defer pg.Close()
	_, r := sq.Pools()

	sqTables := sqliteShapes(ctx, t, r)
	pgTables := postgresShapes(ctx, t, pg.DB())
	for _, name := range postgresOnlyTables {
		if _, ok := pgTables[name]; !ok {
			t.Errorf("PostgreSQL has no table %s", name)
		}
		delete(pgTables, name)
	}
	if len(sqTables) < 10 {
		t.Fatalf("SQLite has %d tables, want the hub's 10 at least", len(sqTables))
	}
	if diff := cmp.Diff(sqTables, pgTables); diff != "" {
		t.Errorf("SQLite and PostgreSQL schemas differ (-sqlite +postgres):\n%s", diff)
	}
}

func sqliteShapes(ctx context.Context, t *testing.T, db *sql.DB) map[string]tableShape {
	t.Helper()
	out := map[string]tableShape{}
	for _, table := range queryStrings(ctx, t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`) {
		var sh tableShape
		sh.Columns = queryStrings(ctx, t, db, `SELECT name FROM pragma_table_info($1) ORDER BY cid`, table)
		sh.PrimaryKey = queryStrings(ctx, t, db, `SELECT name FROM pragma_table_info($1) WHERE pk > 0 ORDER BY pk`, table)
		sh.ForeignKeys = queryStrings(ctx, t, db, `
SELECT "from" || ' -> ' || "table" || '(' || "to" || ')' FROM pragma_foreign_key_list($1) ORDER BY 1`, table)
		sh.Indexes = queryStrings(ctx, t, db, `
SELECT l.name || '(' || (SELECT group_concat(name, ', ') FROM (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno)) || ')'
FROM pragma_index_list($1) AS l WHERE l.origin = 'c' ORDER BY 1`, table)
		out[table] = sh
	}
	return out
}

func postgresShapes(ctx context.Context, t *testing.T, db *sql.DB) map[string]tableShape {
	t.Helper()
	out := map[string]tableShape{}
	for _, table := range queryStrings(ctx, t, db, `
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`) {
		var sh tableShape
		sh.Columns = queryStrings(ctx, t, db, `
SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1
ORDER BY ordinal_position`, table)
		sh.PrimaryKey = queryStrings(ctx, t, db, `
SELECT a.attname FROM pg_index x
JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
WHERE x.indrelid = ('public.' || $1)::regclass AND x.indisprimary
ORDER BY array_position(x.indkey::int2[], a.attnum)`, table)
		sh.ForeignKeys = queryStrings(ctx, t, db, `
SELECT fk FROM (SELECT a.attname || ' -> ' || rt.relname || '(' || ra.attname || ')' AS fk
FROM pg_constraint c
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
JOIN pg_class rt ON rt.oid = c.confrelid
JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1]
WHERE c.conrelid = ('public.' || $1)::regclass AND c.contype = 'f') AS f
ORDER BY fk COLLATE "C"`, table)
		sh.Indexes = queryStrings(ctx, t, db, `
SELECT ix FROM (SELECT i.relname || '(' || string_agg(a.attname, ', ' ORDER BY array_position(x.indkey::int2[], a.attnum)) || ')' AS ix
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
WHERE x.indrelid = ('public.' || $1)::regclass AND NOT x.indisprimary
GROUP BY i.relname) AS i
ORDER BY ix COLLATE "C"`, table)
		out[table] = sh
	}
	return out
}

// queryStrings returns the first column of every row of query, nil for none.
func queryStrings(ctx context.Context, t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return slices.Clip(out)
}
