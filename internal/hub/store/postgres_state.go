package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PutDesiredState stores doc for cluster, raising the generation by one only when doc differs
// from the stored document (the first gets 1). UpdatedAt records the last change, not the
// last call. ErrNotFound if the cluster is not registered.
//
// The cluster row is locked (NO KEY UPDATE) first, so two replicas writing the same cluster's
// state queue rather than both raising the generation from the same read.
func (s *Postgres) PutDesiredState(ctx context.Context, cluster string, doc []byte) (generation int64, changed bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		generation, changed = 0, false // a retried transaction starts afresh
		if err := lockCluster(ctx, tx, cluster, "NO KEY UPDATE"); err != nil {
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
			cluster, generation, notNil(doc), s.now().UTC())
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("desired state of cluster %q: %w", cluster, err)
	}
	return generation, changed, nil
}

// GetDesiredState returns the cluster's desired state, or ErrNotFound.
func (s *Postgres) GetDesiredState(ctx context.Context, cluster string) (DesiredState, error) {
	d := DesiredState{Cluster: cluster}
	var updatedAt sql.NullTime
	err := s.db.QueryRowContext(ctx, `
SELECT generation, document, updated_at FROM desired_states WHERE cluster = $1`, cluster).
		Scan(&d.Generation, &d.Document, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return DesiredState{}, fmt.Errorf("desired state of cluster %q: %w", cluster, ErrNotFound)
	}
	if err != nil {
		return DesiredState{}, fmt.Errorf("desired state of cluster %q: %w", cluster, err)
	}
	d.UpdatedAt = fromPG(updatedAt)
	return d, nil
}

// ListDesiredStates returns every stored desired state, ordered by cluster.
func (s *Postgres) ListDesiredStates(ctx context.Context) ([]DesiredState, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT cluster, generation, document, updated_at FROM desired_states ORDER BY cluster COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list desired states: %w", err)
	}
	defer rows.Close()
	var out []DesiredState
	for rows.Next() {
		var d DesiredState
		var updatedAt sql.NullTime
		if err := rows.Scan(&d.Cluster, &d.Generation, &d.Document, &updatedAt); err != nil {
			return nil, fmt.Errorf("list desired states: %w", err)
		}
		d.UpdatedAt = fromPG(updatedAt)
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
// The (cluster, seq) primary key makes it exactly-once across replicas: of two inserts of
// the same report, the second waits for the first to commit and then inserts nothing.
func (s *Postgres) IngestReport(ctx context.Context, cluster string, seq uint64, statuses []AssignmentStatus) (duplicate bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		duplicate = false
		if err := lockCluster(ctx, tx, cluster, "KEY SHARE"); err != nil {
			return err
		}
		now := s.now().UTC()
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
		// One statement for all statuses: a report's statuses cost one round trip, not one
		// each. Only a stored status with a strictly later ReportedAt is kept; an equal one
		// is replaced, as the contract says. NULL is the zero time, earlier than any other.
		c := statusColumns(statuses)
		_, err = tx.ExecContext(ctx, `
INSERT INTO statuses (cluster, release, observed_generation, revision, digest, phase, health,
	objects, drifted, conflicts, error, detail, reported_at, updated_at)
SELECT $1, s.* , $14::timestamptz FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
	$7::text[], $8::bigint[], $9::boolean[], $10::bigint[], $11::text[], $12::bytea[], $13::timestamptz[])
	AS s (release, observed_generation, revision, digest, phase, health, objects, drifted, conflicts, error, detail, reported_at)
ON CONFLICT (cluster, release) DO UPDATE SET
	observed_generation = excluded.observed_generation, revision = excluded.revision,
	digest = excluded.digest, phase = excluded.phase, health = excluded.health,
	objects = excluded.objects, drifted = excluded.drifted, conflicts = excluded.conflicts,
	error = excluded.error, detail = excluded.detail, reported_at = excluded.reported_at,
	updated_at = excluded.updated_at
WHERE coalesce(excluded.reported_at, '-infinity') >= coalesce(statuses.reported_at, '-infinity')`,
			cluster, c.release, c.observedGeneration, c.revision, c.digest, c.phase, c.health,
			c.objects, c.drifted, c.conflicts, c.errs, c.detail, c.reportedAt, now)
		if err != nil {
			return fmt.Errorf("statuses: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("report %d of cluster %q: %w", seq, cluster, err)
	}
	return duplicate, nil
}

// ReportsIngested counts the distinct reports ingested for cluster; 0 for an unknown cluster.
func (s *Postgres) ReportsIngested(ctx context.Context, cluster string) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM reports WHERE cluster = $1`, cluster).Scan(&n); err != nil {
		return 0, fmt.Errorf("reports of cluster %q: %w", cluster, err)
	}
	return n, nil
}

// RecordCompacted records n reports dropped by the agent's outbox, once per (cluster, seq).
func (s *Postgres) RecordCompacted(ctx context.Context, cluster string, seq, n uint64) error {
	if n == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := lockCluster(ctx, tx, cluster, "KEY SHARE"); err != nil {
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
func (s *Postgres) ReportStats(ctx context.Context, cluster string) (ReportStats, error) {
	var st ReportStats
	var last int64
	err := s.db.QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM reports WHERE cluster = $1),
	(SELECT coalesce(max(seq), 0) FROM reports WHERE cluster = $1),
	(SELECT coalesce(sum(reports), 0) FROM compactions WHERE cluster = $1)`, cluster).Scan(&st.Ingested, &last, &st.Compacted)
	if err != nil {
		return st, fmt.Errorf("report stats of cluster %q: %w", cluster, err)
	}
	st.LastSeq = uint64(last)
	return st, nil
}

// ListStatuses returns every stored assignment status, ordered by release then cluster.
func (s *Postgres) ListStatuses(ctx context.Context) ([]AssignmentStatus, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT cluster, release, observed_generation, revision, digest, phase, health, objects, drifted,
	conflicts, error, detail, reported_at, updated_at
FROM statuses ORDER BY release COLLATE "C", cluster COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("statuses: %w", err)
	}
	defer rows.Close()
	var out []AssignmentStatus
	for rows.Next() {
		var (
			st                    AssignmentStatus
			reportedAt, updatedAt sql.NullTime
		)
		if err := rows.Scan(&st.Cluster, &st.Release, &st.ObservedGeneration, &st.Revision,
			&st.Digest, &st.Phase, &st.Health, &st.Objects, &st.Drifted, &st.Conflicts, &st.Error,
			&st.Detail, &reportedAt, &updatedAt); err != nil {
			return nil, fmt.Errorf("statuses: %w", err)
		}
		st.ReportedAt = fromPG(reportedAt)
		st.UpdatedAt = fromPG(updatedAt)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("statuses: %w", err)
	}
	return out, nil
}

// statusArrays are a report's statuses as one array per column, for unnest.
type statusArrays struct {
	release, revision, digest, phase, health, errs []string
	observedGeneration, objects, conflicts         []int64
	drifted                                        []bool
	detail                                         [][]byte
	reportedAt                                     []*time.Time
}

// statusColumns turns statuses into columns, one row per release. One statement may not
// update a row twice, so of several statuses of one release it keeps the one that applying
// them in order would leave: the last of those with the latest ReportedAt.
func statusColumns(statuses []AssignmentStatus) statusArrays {
	winner := map[string]int{}
	for i, st := range statuses {
		if j, ok := winner[st.Release]; !ok || !st.ReportedAt.Before(statuses[j].ReportedAt) {
			winner[st.Release] = i
		}
	}
	var c statusArrays
	for i, st := range statuses {
		if winner[st.Release] != i {
			continue
		}
		c.release = append(c.release, st.Release)
		c.observedGeneration = append(c.observedGeneration, st.ObservedGeneration)
		c.revision = append(c.revision, st.Revision)
		c.digest = append(c.digest, st.Digest)
		c.phase = append(c.phase, st.Phase)
		c.health = append(c.health, st.Health)
		c.objects = append(c.objects, int64(st.Objects))
		c.drifted = append(c.drifted, st.Drifted)
		c.conflicts = append(c.conflicts, int64(st.Conflicts))
		c.errs = append(c.errs, st.Error)
		c.detail = append(c.detail, st.Detail)
		var t *time.Time
		if !st.ReportedAt.IsZero() {
			u := st.ReportedAt.UTC()
			t = &u
		}
		c.reportedAt = append(c.reportedAt, t)
	}
	return c
}
