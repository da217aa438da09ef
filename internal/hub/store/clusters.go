package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AddCluster registers c; ErrExists if the name is taken.
func (s *sqlStore) AddCluster(ctx context.Context, c Cluster) error {
	labels, err := json.Marshal(c.Labels)
	if err != nil {
		return fmt.Errorf("cluster %q: labels: %w", c.Name, err)
	}
	res, err := s.db.ExecContext(ctx, `
INSERT INTO clusters (name, labels, created_at, last_seen, agent_version) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name) DO NOTHING`,
		c.Name, string(labels), s.d.time(c.CreatedAt), s.d.time(c.LastSeen), c.AgentVersion)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	if err := oneRow(res, ErrExists); err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	return nil
}

// GetCluster returns the named cluster or ErrNotFound.
func (s *sqlStore) GetCluster(ctx context.Context, name string) (Cluster, error) {
	row := s.ro.QueryRowContext(ctx, `
SELECT name, labels, created_at, last_seen, agent_version FROM clusters WHERE name = $1`, name)
	c, err := scanCluster(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Cluster{}, fmt.Errorf("cluster %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	return c, nil
}

// ListClusters returns every cluster, ordered by name (byte order).
func (s *sqlStore) ListClusters(ctx context.Context) ([]Cluster, error) {
	rows, err := s.ro.QueryContext(ctx, `
SELECT name, labels, created_at, last_seen, agent_version FROM clusters ORDER BY name`+s.d.byteOrder)
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

func scanCluster(sc scanner) (Cluster, error) {
	var (
		c      Cluster
		labels string
	)
	if err := sc.Scan(&c.Name, &labels, scanTime(&c.CreatedAt), scanTime(&c.LastSeen), &c.AgentVersion); err != nil {
		return Cluster{}, err
	}
	if err := json.Unmarshal([]byte(labels), &c.Labels); err != nil {
		return Cluster{}, fmt.Errorf("cluster %q: labels: %w", c.Name, err)
	}
	return c, nil
}

// SetClusterLabels replaces the cluster's labels; ErrNotFound if it does not exist.
func (s *sqlStore) SetClusterLabels(ctx context.Context, name string, labels map[string]string) error {
	b, err := json.Marshal(labels)
	if err != nil {
		return fmt.Errorf("cluster %q: labels: %w", name, err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE clusters SET labels = $1 WHERE name = $2`, string(b), name)
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
func (s *sqlStore) TouchCluster(ctx context.Context, name string, t time.Time, agentVersion string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE clusters SET last_seen = $1, agent_version = $2 WHERE name = $3`,
		s.d.time(t), agentVersion, name)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	if err := oneRow(res, ErrNotFound); err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	return nil
}

// TouchClusters records many sightings in one transaction, with one prepared statement: the
// hub's last-seen flush writes thousands every few seconds, and a transaction (a commit,
// with SQLite an fsync) per cluster was most of an idle hub's cost. The touches are written
// in cluster order, so that two PostgreSQL replicas flushing the same clusters lock their
// rows in the same order and cannot deadlock.
func (s *sqlStore) TouchClusters(ctx context.Context, touches []Touch) error {
	if len(touches) == 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(touches), func(a, b Touch) int { return strings.Compare(a.Cluster, b.Cluster) })
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE clusters SET last_seen = $1, agent_version = $2 WHERE name = $3`)
		if err != nil {
			return err
		}
		defer func() { _ = stmt.Close() }() // the statements' own errors are checked
		for _, t := range sorted {
			if _, err := stmt.ExecContext(ctx, s.d.time(t.Seen), t.AgentVersion, t.Cluster); err != nil {
				return fmt.Errorf("cluster %q: %w", t.Cluster, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("touch %d clusters: %w", len(touches), err)
	}
	return nil
}

// RemoveCluster deletes the cluster with its tokens, desired state, statuses and reports, and
// revokes every certificate issued to it, in one transaction. ErrNotFound if absent.
func (s *sqlStore) RemoveCluster(ctx context.Context, name string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Where rows are locked, lock the cluster first: a report or desired state being
		// written for it finishes before the deletes start, and none starts after. (SQLite's
		// writer excludes them anyway, and the last delete finds out whether it exists.)
		if s.d.lockRows {
			if err := s.lockCluster(ctx, tx, name, "UPDATE"); err != nil {
				return err
			}
		}
		// The cluster row goes last: the foreign keys of the dependent tables refuse its
		// deletion while any of their rows remain, so a table forgotten here fails loudly.
		for _, q := range []string{
			`UPDATE certificates SET revoked = true WHERE cluster = $1`,
			`DELETE FROM join_tokens WHERE cluster = $1`,
			`DELETE FROM desired_states WHERE cluster = $1`,
			`DELETE FROM statuses WHERE cluster = $1`,
			`DELETE FROM reports WHERE cluster = $1`,
			`DELETE FROM compactions WHERE cluster = $1`,
			`DELETE FROM audit_checkpoints WHERE cluster = $1`,
		} {
			if _, err := tx.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM clusters WHERE name = $1`, name)
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
