package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// PutDesiredState stores doc for cluster, raising the generation by one only when doc differs
// from the stored document (the first gets 1). UpdatedAt records the last change, not the
// last call. ErrNotFound if the cluster is not registered: a scheduler pass racing with
// RemoveCluster must not bring back state for a removed cluster.
//
// Where rows are locked (PostgreSQL), the cluster row is locked (NO KEY UPDATE) first, so two
// replicas writing the same cluster's state queue rather than both raising the generation
// from the same read.
func (s *sqlStore) PutDesiredState(ctx context.Context, cluster string, doc []byte) (generation int64, changed bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		generation, changed = 0, false // a retried transaction starts afresh
		if err := s.lockCluster(ctx, tx, cluster, "NO KEY UPDATE"); err != nil {
			return err
		}
		var stored []byte
		err := tx.QueryRowContext(ctx, `
SELECT generation, document FROM desired_states WHERE cluster = $1`, cluster).Scan(&generation, &stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			generation, changed = 1, true
		case err != nil:
			return err
		case bytes.Equal(stored, doc):
			return nil
		default:
			generation, changed = generation+1, true
		}
		_, err = tx.ExecContext(ctx, `
INSERT INTO desired_states (cluster, generation, document, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (cluster) DO UPDATE SET
	generation = excluded.generation, document = excluded.document, updated_at = excluded.updated_at`,
			cluster, generation, notNil(doc), s.d.time(s.now()))
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("desired state of cluster %q: %w", cluster, err)
	}
	return generation, changed, nil
}

// GetDesiredState returns the cluster's desired state, or ErrNotFound.
func (s *sqlStore) GetDesiredState(ctx context.Context, cluster string) (DesiredState, error) {
	d := DesiredState{Cluster: cluster}
	err := s.ro.QueryRowContext(ctx, `
SELECT generation, document, updated_at FROM desired_states WHERE cluster = $1`, cluster).
		Scan(&d.Generation, &d.Document, scanTime(&d.UpdatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return DesiredState{}, fmt.Errorf("desired state of cluster %q: %w", cluster, ErrNotFound)
	}
	if err != nil {
		return DesiredState{}, fmt.Errorf("desired state of cluster %q: %w", cluster, err)
	}
	return d, nil
}

// ListDesiredStates returns every stored desired state, ordered by cluster (byte order).
func (s *sqlStore) ListDesiredStates(ctx context.Context) ([]DesiredState, error) {
	rows, err := s.ro.QueryContext(ctx, `
SELECT cluster, generation, document, updated_at FROM desired_states ORDER BY cluster`+s.d.byteOrder)
	if err != nil {
		return nil, fmt.Errorf("list desired states: %w", err)
	}
	defer rows.Close()
	var out []DesiredState
	for rows.Next() {
		var d DesiredState
		if err := rows.Scan(&d.Cluster, &d.Generation, &d.Document, scanTime(&d.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("list desired states: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list desired states: %w", err)
	}
	return out, nil
}

// IngestReport records report seq of cluster at most once, and with it each status unless the
// stored status of the same release has a later ReportedAt. The statuses belong to cluster
// (their Cluster field is ignored) and their UpdatedAt is set to the time of ingestion.
// ErrNotFound if the cluster is not registered.
//
// seq is stored as the int64 with the same bits, so every uint64 is a distinct report. The
// (cluster, seq) primary key makes it exactly-once across PostgreSQL replicas too: of two
// inserts of the same report, the second waits for the first to commit and then inserts
// nothing.
func (s *sqlStore) IngestReport(ctx context.Context, cluster string, seq uint64, statuses []AssignmentStatus) (duplicate bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		duplicate = false
		if err := s.lockCluster(ctx, tx, cluster, "KEY SHARE"); err != nil {
			return err
		}
		now := s.d.time(s.now())
		res, err := tx.ExecContext(ctx, `
INSERT INTO reports (cluster, seq, ingested_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			cluster, int64(seq), now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			duplicate = true
			return nil
		}
		if len(statuses) == 0 {
			return nil
		}
		return s.d.putStatuses(ctx, tx, cluster, statuses, now)
	})
	if err != nil {
		return false, fmt.Errorf("report %d of cluster %q: %w", seq, cluster, err)
	}
	return duplicate, nil
}

// ReportsIngested counts the distinct reports ingested for cluster; 0 for an unknown cluster.
func (s *sqlStore) ReportsIngested(ctx context.Context, cluster string) (int64, error) {
	var n int64
	if err := s.ro.QueryRowContext(ctx, `SELECT count(*) FROM reports WHERE cluster = $1`, cluster).Scan(&n); err != nil {
		return 0, fmt.Errorf("reports of cluster %q: %w", cluster, err)
	}
	return n, nil
}

// RecordCompacted records n reports dropped by the agent's outbox, once per (cluster, seq).
func (s *sqlStore) RecordCompacted(ctx context.Context, cluster string, seq, n uint64) error {
	if n == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockCluster(ctx, tx, cluster, "KEY SHARE"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
INSERT INTO compactions (cluster, seq, reports) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			cluster, int64(seq), int64(n))
		return err
	})
	if err != nil {
		return fmt.Errorf("compaction count in report %d of cluster %q: %w", seq, cluster, err)
	}
	return nil
}

// ReportStats returns the reports ingested, the highest seq and the reports compacted away.
func (s *sqlStore) ReportStats(ctx context.Context, cluster string) (ReportStats, error) {
	var st ReportStats
	var last int64
	err := s.ro.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM reports WHERE cluster = $1),
	(SELECT coalesce(max(seq), 0) FROM reports WHERE cluster = $1),
	(SELECT coalesce(sum(reports), 0) FROM compactions WHERE cluster = $1)`, cluster).Scan(&st.Ingested, &last, &st.Compacted)
	if err != nil {
		return st, fmt.Errorf("report stats of cluster %q: %w", cluster, err)
	}
	st.LastSeq = uint64(last)
	return st, nil
}

// ClustersReporting returns the clusters that reported a status of release, in byte order.
func (s *sqlStore) ClustersReporting(ctx context.Context, release string) ([]string, error) {
	rows, err := s.ro.QueryContext(ctx, `SELECT cluster FROM statuses WHERE release = $1 ORDER BY cluster`+s.d.byteOrder, release)
	if err != nil {
		return nil, fmt.Errorf("clusters reporting release %q: %w", release, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("clusters reporting release %q: %w", release, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clusters reporting release %q: %w", release, err)
	}
	return out, nil
}

// ListStatuses returns every stored assignment status, ordered by release then cluster (byte
// order).
func (s *sqlStore) ListStatuses(ctx context.Context) ([]AssignmentStatus, error) {
	rows, err := s.ro.QueryContext(ctx, `
SELECT cluster, release, observed_generation, revision, digest, phase, health, objects, drifted,
	conflicts, error, detail, reported_at, updated_at
FROM statuses ORDER BY release`+s.d.byteOrder+`, cluster`+s.d.byteOrder)
	if err != nil {
		return nil, fmt.Errorf("statuses: %w", err)
	}
	defer rows.Close()
	var out []AssignmentStatus
	for rows.Next() {
		var st AssignmentStatus
		if err := rows.Scan(&st.Cluster, &st.Release, &st.ObservedGeneration, &st.Revision,
			&st.Digest, &st.Phase, &st.Health, &st.Objects, &st.Drifted, &st.Conflicts, &st.Error,
			&st.Detail, scanTime(&st.ReportedAt), scanTime(&st.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("statuses: %w", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("statuses: %w", err)
	}
	return out, nil
}
