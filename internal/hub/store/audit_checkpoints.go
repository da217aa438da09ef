package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/flotilla/flotilla/internal/audit"
)

const auditCheckpointColumns = `revision, digest, phase, health, since, chained_at, first_verified, last_verified, checks`

func scanAuditCheckpoint(row scanner) (audit.Checkpoint, error) {
	var cp audit.Checkpoint
	err := row.Scan(&cp.Revision, &cp.Digest, &cp.Phase, &cp.Health, scanTime(&cp.Since),
		scanTime(&cp.ChainedAt), scanTime(&cp.FirstVerified), scanTime(&cp.LastVerified), &cp.Count)
	return cp, err
}

// UpdateAuditCheckpoint reads the checkpoint of release on cluster, calls fn once with it
// (ok false: there is none) and stores what fn returns, or deletes it if keep is false, in
// one transaction. Where rows are locked (PostgreSQL) the cluster row is locked first (NO KEY
// UPDATE), so updates of one cluster's checkpoints from several replicas queue rather than
// act on a stale read. An error from fn aborts the update and is returned, wrapped.
// ErrNotFound if the cluster is not registered.
func (s *sqlStore) UpdateAuditCheckpoint(ctx context.Context, cluster, release string,
	fn func(cp audit.Checkpoint, ok bool) (next audit.Checkpoint, keep bool, err error)) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.lockCluster(ctx, tx, cluster, "NO KEY UPDATE"); err != nil {
			return err
		}
		cp, err := scanAuditCheckpoint(tx.QueryRowContext(ctx, `SELECT `+auditCheckpointColumns+`
FROM audit_checkpoints WHERE cluster = $1 AND release = $2`, cluster, release))
		ok := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		next, keep, err := fn(cp, ok)
		switch {
		case err != nil:
			return err
		case !keep:
			_, err = tx.ExecContext(ctx, `DELETE FROM audit_checkpoints WHERE cluster = $1 AND release = $2`, cluster, release)
			return err
		}
		_, err = tx.ExecContext(ctx, `
INSERT INTO audit_checkpoints (cluster, release, `+auditCheckpointColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (cluster, release) DO UPDATE SET
	revision = excluded.revision, digest = excluded.digest, phase = excluded.phase,
	health = excluded.health, since = excluded.since, chained_at = excluded.chained_at,
	first_verified = excluded.first_verified, last_verified = excluded.last_verified,
	checks = excluded.checks`,
			cluster, release, next.Revision, next.Digest, next.Phase, next.Health, s.d.time(next.Since),
			s.d.time(next.ChainedAt), s.d.time(next.FirstVerified), s.d.time(next.LastVerified), next.Count)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit checkpoint of release %q on cluster %q: %w", release, cluster, err)
	}
	return nil
}
