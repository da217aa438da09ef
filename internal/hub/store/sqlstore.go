package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// sqlStore is the Store of both SQLite and PostgreSQL, through database/sql: the SQL is
// written once, and d says what differs between the two databases.
type sqlStore struct {
	// db takes writes and transactions; ro takes reads outside transactions. They are one
	// pool in PostgreSQL; SQLite's writer is one connection and its readers are others (see
	// SQLite).
	db, ro *sql.DB
	d      *dialect
	// now stamps the times the store itself records (UpdatedAt, ingestion time); tests in
	// this package replace it.
	now func() time.Time
}

// Close closes the connection pools.
func (s *sqlStore) Close() error {
	if s.ro == s.db {
		return s.db.Close()
	}
	return errors.Join(s.ro.Close(), s.db.Close())
}

// inTx runs fn in a transaction (SQLite: the one writer's; PostgreSQL: READ COMMITTED) and
// commits it if fn returns nil.
func (s *sqlStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
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

// lockCluster returns ErrNotFound unless the named cluster is registered; where rows are
// locked (PostgreSQL), it holds the row lock mode until tx ends, so that a concurrent
// RemoveCluster waits (mode "KEY SHARE") or so that writers of the cluster's own rows queue
// ("NO KEY UPDATE").
func (s *sqlStore) lockCluster(ctx context.Context, tx *sql.Tx, name, mode string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM clusters WHERE name = $1`+s.d.forLock(mode), name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("cluster not registered: %w", ErrNotFound)
	}
	return err
}

// oneRow returns errNone if res affected no row: the row to change does not exist, or (for an
// INSERT ... ON CONFLICT DO NOTHING) already does.
func oneRow(res sql.Result, errNone error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return errNone
	}
	return nil
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// nullTime scans a time column of either database: SQLite's unix nanoseconds (0 is the zero
// time) or PostgreSQL's timestamptz, both as UTC; NULL is the zero time, and not Valid.
type nullTime struct {
	Time  time.Time
	Valid bool
}

func (t *nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = nullTime{}
	case int64:
		*t = nullTime{Time: fromNanos(v), Valid: true}
	case time.Time:
		*t = nullTime{Time: v.UTC(), Valid: true}
	default:
		return fmt.Errorf("time column holds a %T, want an integer or a timestamp", src)
	}
	return nil
}

// scanTime is a scan destination that stores a time column (as nullTime reads it) into t. It
// holds nothing but t, so it is passed to Scan without an allocation: list queries scan two
// times a row.
func scanTime(t *time.Time) sql.Scanner { return timeDest{t} }

type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	var n nullTime
	if err := n.Scan(src); err != nil {
		return err
	}
	*d.t = n.Time
	return nil
}

// notNil makes a nil slice an empty one, for NOT NULL BLOB columns (the drivers bind nil as
// NULL).
func notNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// DB and ReadDB are the database's pools for writes and for reads (SQLite: the one writer
// and the query-only readers; PostgreSQL: one pool), for a package that keeps its own small
// tables beside the store's (the user API's tokens, internal/hub/access) or copies the store
// (storecopy): it must not write the store's tables.
func (s *sqlStore) DB() *sql.DB     { return s.db }
func (s *sqlStore) ReadDB() *sql.DB { return s.ro }
