package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// GetRecord returns the record (kind, key), or ErrNotFound.
func (s *sqlStore) GetRecord(ctx context.Context, kind, key string) (Record, error) {
	r := Record{Kind: kind, Key: key}
	err := s.ro.QueryRowContext(ctx, `SELECT data, version, updated_at FROM records WHERE kind = $1 AND key = $2`, kind, key).
		Scan(&r.Data, &r.Version, scanTime(&r.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("%s %q: %w", kind, key, err)
	}
	return r, nil
}

// ListRecords returns every record of kind, ordered by key (byte order).
func (s *sqlStore) ListRecords(ctx context.Context, kind string) ([]Record, error) {
	rows, err := s.ro.QueryContext(ctx, `
SELECT key, data, version, updated_at FROM records WHERE kind = $1 ORDER BY key`+s.d.byteOrder, kind)
	if err != nil {
		return nil, fmt.Errorf("%s records: %w", kind, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r := Record{Kind: kind}
		if err := rows.Scan(&r.Key, &r.Data, &r.Version, scanTime(&r.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("%s records: %w", kind, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s records: %w", kind, err)
	}
	return out, nil
}

// PutRecord writes r if the stored version is expect: a row lock (PostgreSQL) or the one
// writer (SQLite) makes the read and the write one step, so two replicas never both win. A
// record that does not exist yet has no row to lock: it is created with an insert that does
// nothing when a concurrent writer created it first, which is then a conflict (an upsert here
// let both writers win, and one update was lost).
func (s *sqlStore) PutRecord(ctx context.Context, r Record, expect int64) (int64, error) {
	var version int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var stored int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM records WHERE kind = $1 AND key = $2`+s.d.forLock("UPDATE"), r.Kind, r.Key).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if expect != AnyVersion && expect != 0 {
				return fmt.Errorf("no version stored, %d expected: %w", expect, ErrConflict)
			}
			res, err := tx.ExecContext(ctx, `
INSERT INTO records (kind, key, data, version, updated_at) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (kind, key) DO NOTHING`, r.Kind, r.Key, notNil(r.Data), s.d.time(s.now()))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 1 {
				version = 1
				return err
			}
			if expect != AnyVersion {
				return fmt.Errorf("created by another writer meanwhile, none expected: %w", ErrConflict)
			}
			// Any version will do: write over what the other writer created.
			return tx.QueryRowContext(ctx, `
UPDATE records SET data = $3, version = version + 1, updated_at = $4 WHERE kind = $1 AND key = $2 RETURNING version`,
				r.Kind, r.Key, notNil(r.Data), s.d.time(s.now())).Scan(&version)
		case err != nil:
			return err
		case expect != AnyVersion && stored != expect:
			return fmt.Errorf("version %d stored, %d expected: %w", stored, expect, ErrConflict)
		}
		version = stored + 1
		_, err = tx.ExecContext(ctx, `UPDATE records SET data = $3, version = $4, updated_at = $5 WHERE kind = $1 AND key = $2`,
			r.Kind, r.Key, notNil(r.Data), version, s.d.time(s.now()))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", r.Kind, r.Key, err)
	}
	return version, nil
}

// DeleteRecord deletes (kind, key) if its version is expect.
func (s *sqlStore) DeleteRecord(ctx context.Context, kind, key string, expect int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var stored int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM records WHERE kind = $1 AND key = $2`+s.d.forLock("UPDATE"), kind, key).Scan(&stored)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if expect != AnyVersion && stored != expect {
			return fmt.Errorf("version %d stored, %d expected: %w", stored, expect, ErrConflict)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM records WHERE kind = $1 AND key = $2`, kind, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %q: %w", kind, key, err)
	}
	return nil
}
