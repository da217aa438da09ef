package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// AddCluster registers c; ErrExists if the name is taken.
func (s *SQLite) AddCluster(ctx context.Context, c Cluster) error {
	labels, err := json.Marshal(c.Labels)
	if err != nil {
		return fmt.Errorf("cluster %q: labels: %w", c.Name, err)
	}
	res, err := s.w.ExecContext(ctx, `
INSERT INTO clusters (name, labels, created_at, last_seen, agent_version) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name) DO NOTHING`,
		c.Name, string(labels), toNanos(c.CreatedAt), toNanos(c.LastSeen), c.AgentVersion)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	if err := oneRow(res, ErrExists); err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	return nil
}

// GetCluster returns the named cluster or ErrNotFound.
func (s *SQLite) GetCluster(ctx context.Context, name string) (Cluster, error) {
	row := s.r.QueryRowContext(ctx, `
SELECT name, labels, created_at, last_seen, agent_version FROM clusters WHERE name = ?`, name)
	c, err := scanCluster(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Cluster{}, fmt.Errorf("cluster %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	return c, nil
}

// ListClusters returns every cluster, ordered by name.
func (s *SQLite) ListClusters(ctx context.Context) ([]Cluster, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT name, labels, created_at, last_seen, agent_version FROM clusters ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	defer rows.Close()
	var out []Cluster
	for rows.Next() {
		c, err := scanCluster(rows)
		if err != nil {
			return nil, fmt.Errorf("clusters: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clusters: %w", err)
	}
	return out, nil
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

func scanCluster(sc scanner) (Cluster, error) {
	var (
		c                   Cluster
		labels              string
		createdAt, lastSeen int64
	)
	if err := sc.Scan(&c.Name, &labels, &createdAt, &lastSeen, &c.AgentVersion); err != nil {
		return Cluster{}, err
	}
	if err := json.Unmarshal([]byte(labels), &c.Labels); err != nil {
		return Cluster{}, fmt.Errorf("cluster %q: labels: %w", c.Name, err)
	}
	c.CreatedAt = fromNanos(createdAt)
	c.LastSeen = fromNanos(lastSeen)
	return c, nil
}

// SetClusterLabels replaces the cluster's labels; ErrNotFound if it does not exist.
func (s *SQLite) SetClusterLabels(ctx context.Context, name string, labels map[string]string) error {
	b, err := json.Marshal(labels)
	if err != nil {
		return fmt.Errorf("cluster %q: labels: %w", name, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE clusters SET labels = ? WHERE name = ?`, string(b), name)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	if err := oneRow(res, ErrNotFound); err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	return nil
}

// TouchCluster records that the cluster's agent was seen at t, running agentVersion;
// ErrNotFound if the cluster does not exist.
func (s *SQLite) TouchCluster(ctx context.Context, name string, t time.Time, agentVersion string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE clusters SET last_seen = ?, agent_version = ? WHERE name = ?`,
		toNanos(t), agentVersion, name)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	if err := oneRow(res, ErrNotFound); err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	return nil
}

// RemoveCluster deletes the cluster with its tokens, desired state, statuses and reports, and
// revokes every certificate issued to it, in one transaction. ErrNotFound if absent.
func (s *SQLite) RemoveCluster(ctx context.Context, name string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The cluster row goes last: the foreign keys of the dependent tables refuse its
		// deletion while any of their rows remain, so a table forgotten here fails loudly.
		for _, q := range []string{
			`UPDATE certificates SET revoked = 1 WHERE cluster = ?`,
			`DELETE FROM join_tokens WHERE cluster = ?`,
			`DELETE FROM desired_states WHERE cluster = ?`,
			`DELETE FROM statuses WHERE cluster = ?`,
			`DELETE FROM reports WHERE cluster = ?`,
			`DELETE FROM compactions WHERE cluster = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM clusters WHERE name = ?`, name)
		if err != nil {
			return err
		}
		return oneRow(res, ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	return nil
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
