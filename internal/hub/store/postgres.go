package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Postgres is the Store kept in a PostgreSQL database, the one several hub replicas share.
//
// Every method is one statement or one READ COMMITTED transaction. Where a method reads before
// it writes, it first locks the row it depends on (the cluster, the token), so replicas that
// call it at once for the same row queue on that lock instead of both acting on a stale read.
type Postgres struct {
	sqlStore // db and ro: the one pool
	// cfg is the parsed connection string, for the dedicated connections of Listen.
	cfg *pgx.ConnConfig
	// where names the server and database in errors, without the password.
	where string
	opts  PostgresOptions
}

var _ Store = (*Postgres)(nil)

// PostgresOptions tune the connection pool.
type PostgresOptions struct {
	// MaxConns bounds open connections from this hub. Default 16.
	MaxConns int
	// ConnectTimeout bounds the first connection. Default 10s.
	ConnectTimeout time.Duration
	// ListenCheck is how long Listen waits for a notification before it checks that its
	// connection still answers: a connection that died silently (a partition, a database
	// that moved) would otherwise wait forever. Default 10s.
	ListenCheck time.Duration
}

func (o *PostgresOptions) setDefaults() {
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.ListenCheck <= 0 {
		o.ListenCheck = 10 * time.Second
	}
}

// postgresMigrationLock is the key of the advisory lock that makes hubs starting at once
// against one database migrate one after another.
const postgresMigrationLock = 0x666c6f74696c6c61 // "flotilla"

var postgresDialect = dialect{
	lock: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, postgresMigrationLock),
	table: `
CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL
)`,
	record:   `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
	step:     func(m migration) string { return m.postgres },
	time:     pgTime,
	nullTime: pgTime,
	// The database keeps microseconds: now is truncated to them, as it would be stored.
	instant: func(now time.Time) any { return now.UTC().Truncate(time.Microsecond) },
	compareTimes: func(a, b time.Time) int {
		return a.Truncate(time.Microsecond).Compare(b.Truncate(time.Microsecond))
	},
	byteOrder:   ` COLLATE "C"`,
	lockRows:    true,
	putStatuses: postgresPutStatuses,
}

// OpenPostgres connects to the database dsn names (a postgres:// URL or a key=value string,
// as libpq takes), checks that the server answers, and brings the schema up to date. It
// refuses a database written by a newer hub.
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Postgres, error) {
	return openPostgres(ctx, dsn, opts, migrations)
}

func openPostgres(ctx context.Context, dsn string, opts PostgresOptions, migs []migration) (*Postgres, error) {
	opts.setDefaults()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the whole string, password included.
		return nil, errors.New("postgres store: the connection string does not parse: want postgres://user:password@host:port/database?sslmode=MODE")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = opts.ConnectTimeout
	}
	where := describe(cfg)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("postgres store %s: cannot connect (is the server running, and the address, user and password right?): %w", where, err)
	}
	if err := migrate(ctx, db, migs, &postgresDialect); err != nil {
		_ = db.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("postgres store %s: %w", where, err)
	}
	return &Postgres{
		sqlStore: sqlStore{db: db, ro: db, d: &postgresDialect, now: time.Now},
		cfg:      cfg,
		where:    where,
		opts:     opts,
	}, nil
}

// describe names a server and database for errors and logs: user@host:port/database.
func describe(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if len(host) > 0 && host[0] == '/' {
		return fmt.Sprintf("%s@[%s]/%s", cfg.User, host, cfg.Database)
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, host, cfg.Port, cfg.Database)
}

// String names the server and database, without the password.
func (s *Postgres) String() string { return s.where }

// pgTime stores the zero time as NULL and any other as its instant.
func pgTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}
