package store

import (
	"context"
	"database/sql"
	"time"
)

// dialect is what the one SQL implementation of Store (sqlStore) and migrate need to know of
// a database: the rest of the SQL is the same text for SQLite and PostgreSQL. Both take
// placeholders $1, $2, ...: to SQLite, $1 is a parameter named "$1", which the driver
// (modernc.org/sqlite) binds to the first argument, as PostgreSQL does; a placeholder may
// also stand twice for one argument. The contract suite runs every statement on both.
// (SQLite's upsert of each status binds plain ? instead: see sqlitePutStatuses.)
type dialect struct {
	// lock, if set, runs first in the migration's transaction: it serialises hubs that
	// start at once against one server.
	lock string
	// table creates schema_migrations if it does not exist.
	table string
	// record inserts (version, name, applied_at) into schema_migrations.
	record string
	// step is the text of m for this database.
	step func(m migration) string

	// time is the value of a time column for t (SQLite: unix nanoseconds, 0 for the zero
	// time; PostgreSQL: the instant, NULL for the zero time).
	time func(t time.Time) any
	// nullTime is the value of a time column where NULL means "not yet" in SQL, for t: NULL
	// for the zero time in both.
	nullTime func(t time.Time) any
	// instant is the value of now, as the database keeps it, in a comparison with stored
	// times, and compareTimes compares two times at that precision (SQLite: nanoseconds,
	// clamped to what int64 holds; PostgreSQL: microseconds).
	instant      func(now time.Time) any
	compareTimes func(a, b time.Time) int

	// byteOrder follows a text column in ORDER BY so that it sorts by bytes, not by the
	// database's locale: the order SQLite's BINARY collation gives, on both.
	byteOrder string
	// lockRows says whether a transaction locks the rows it reads before it writes (SELECT
	// ... FOR mode). In PostgreSQL, transactions of several replicas run at once; SQLite has
	// one writer at a time, whose transaction (BEGIN IMMEDIATE) already excludes every other.
	lockRows bool

	// putStatuses upserts statuses of cluster, ingested at now (a time column value), in tx.
	// Only a stored status with a strictly later ReportedAt is kept; an equal one is
	// replaced, as the contract says.
	putStatuses func(ctx context.Context, tx *sql.Tx, cluster string, statuses []AssignmentStatus, now any) error
}

// forLock returns the clause that locks the rows a SELECT reads in mode (UPDATE, NO KEY
// UPDATE, KEY SHARE) until the transaction ends, or "" where rows need no lock.
func (d *dialect) forLock(mode string) string {
	if !d.lockRows {
		return ""
	}
	return " FOR " + mode
}

// statusColumnList and statusConflict are the start and the ON CONFLICT clause of the
// statement that upserts statuses, for putStatuses: each dialect's puts its VALUES (or
// SELECT) between them, and a WHERE after.
const (
	statusColumnList = `INSERT INTO statuses (cluster, release, observed_generation, revision, digest, phase, health,
	objects, drifted, conflicts, error, detail, reported_at, updated_at)
`
	statusConflict = `
ON CONFLICT (cluster, release) DO UPDATE SET
	observed_generation = excluded.observed_generation, revision = excluded.revision,
	digest = excluded.digest, phase = excluded.phase, health = excluded.health,
	objects = excluded.objects, drifted = excluded.drifted, conflicts = excluded.conflicts,
	error = excluded.error, detail = excluded.detail, reported_at = excluded.reported_at,
	updated_at = excluded.updated_at
`
)
