package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// PutSourceStatus replaces the status of source st.Name.
func (s *sqlStore) PutSourceStatus(ctx context.Context, st SourceStatus) error {
	_, err := s.db.ExecContext(ctx, `
INSERT INTO source_statuses (name, url, revision, digest, error, checked_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (name) DO UPDATE SET
	url = excluded.url, revision = excluded.revision, digest = excluded.digest,
	error = excluded.error, checked_at = excluded.checked_at`,
		st.Name, st.URL, st.Revision, st.Digest, st.Error, s.d.time(st.CheckedAt))
	if err != nil {
		return fmt.Errorf("source %q: %w", st.Name, err)
	}
	return nil
}

// ListSourceStatuses returns every source status, ordered by name (byte order).
func (s *sqlStore) ListSourceStatuses(ctx context.Context) ([]SourceStatus, error) {
	rows, err := s.ro.QueryContext(ctx, `
SELECT name, url, revision, digest, error, checked_at FROM source_statuses ORDER BY name`+s.d.byteOrder)
	if err != nil {
		return nil, fmt.Errorf("sources: %w", err)
	}
	defer rows.Close()
	var out []SourceStatus
	for rows.Next() {
		var st SourceStatus
		if err := rows.Scan(&st.Name, &st.URL, &st.Revision, &st.Digest, &st.Error, scanTime(&st.CheckedAt)); err != nil {
			return nil, fmt.Errorf("sources: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sources: %w", err)
	}
	return out, nil
}

// PutFleetStatus replaces the fleet status.
func (s *sqlStore) PutFleetStatus(ctx context.Context, st FleetStatus) error {
	_, err := s.db.ExecContext(ctx, `
INSERT INTO fleet_status (id, revision, error, updated_at) VALUES (1, $1, $2, $3)
ON CONFLICT (id) DO UPDATE SET
	revision = excluded.revision, error = excluded.error, updated_at = excluded.updated_at`,
		st.Revision, st.Error, s.d.time(st.UpdatedAt))
	if err != nil {
		return fmt.Errorf("fleet status: %w", err)
	}
	return nil
}

// GetFleetStatus returns the fleet status, or the zero value if it was never set.
func (s *sqlStore) GetFleetStatus(ctx context.Context) (FleetStatus, error) {
	var st FleetStatus
	err := s.ro.QueryRowContext(ctx, `SELECT revision, error, updated_at FROM fleet_status WHERE id = 1`).
		Scan(&st.Revision, &st.Error, scanTime(&st.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return FleetStatus{}, nil
	}
	if err != nil {
		return FleetStatus{}, fmt.Errorf("fleet status: %w", err)
	}
	return st, nil
}
