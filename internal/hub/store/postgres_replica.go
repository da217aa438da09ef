package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// What several hub replicas sharing one PostgreSQL database need beyond Store: change
// notifications between replicas, leases, artifact blobs and files every replica holds alike.

// ChangeChannel is the PostgreSQL notification channel replicas tell each other of changes on.
const ChangeChannel = "flotilla_changes"

// MaxPayload is the longest notification payload PostgreSQL takes (its limit is "shorter
// than 8000 bytes").
const MaxPayload = 7999

// Publish sends each payload (at most MaxPayload bytes) to every replica listening, this one
// included, in order. Several payloads are sent in one transaction, which PostgreSQL delivers
// whole and in order when it commits; a single one runs in none, so at once.
func (s *Postgres) Publish(ctx context.Context, payloads ...string) error {
	for _, p := range payloads {
		if len(p) > MaxPayload {
			return fmt.Errorf("postgres store %s: publish %.40q...: %d bytes, more than the %d a notification holds", s.where, p, len(p), MaxPayload)
		}
	}
	send := func(ex interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}) error {
		for _, p := range payloads {
			if _, err := ex.ExecContext(ctx, `SELECT pg_notify($1, $2)`, ChangeChannel, p); err != nil {
				return fmt.Errorf("%.40q: %w", p, err)
			}
		}
		return nil
	}
	var err error
	if len(payloads) == 1 {
		err = send(s.db)
	} else if len(payloads) > 1 {
		err = s.inTx(ctx, func(tx *sql.Tx) error { return send(tx) })
	}
	if err != nil {
		return fmt.Errorf("postgres store %s: publish %d notifications: %w", s.where, len(payloads), err)
	}
	return nil
}

// Listen opens a connection of its own, listens on ChangeChannel, calls fn("") once listening
// (notifications sent before then were missed: the caller resynchronises), then fn(payload)
// for each notification, until ctx ends (nil) or the connection fails (the error), including
// a connection that stops answering (checked after each ListenCheck without notifications).
// The caller calls it again to reconnect.
func (s *Postgres) Listen(ctx context.Context, fn func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.Copy())
	if err != nil {
		return fmt.Errorf("postgres store %s: listen: %w", s.where, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // on the way out: the queries' own errors are checked
	if _, err := conn.Exec(ctx, `LISTEN `+ChangeChannel); err != nil {
		return fmt.Errorf("postgres store %s: listen: %w", s.where, err)
	}
	fn("")
	for {
		waitCtx, cancel := context.WithTimeout(ctx, s.opts.ListenCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
			// Quiet for a while: make sure the connection is alive, not silently dead.
			pingCtx, cancel := context.WithTimeout(ctx, s.opts.ListenCheck)
			err = conn.Ping(pingCtx)
			cancel()
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("postgres store %s: listen: connection does not answer: %w", s.where, err)
			}
		case err != nil:
			return fmt.Errorf("postgres store %s: listen: %w", s.where, err)
		default:
			fn(n.Payload)
		}
	}
}

// TryLease takes or renews lease name for holder until ttl from now (the database's clock) and
// reports whether holder has it: it does if nobody held it, holder already did, or the last
// holder let it expire.
func (s *Postgres) TryLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	var got string
	err := s.db.QueryRowContext(ctx, `
INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, now() + $3 * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.holder = excluded.holder OR leases.expires_at < now()
RETURNING holder`, name, holder, ttl.Microseconds()).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // held by another replica, unexpired
	}
	if err != nil {
		return false, fmt.Errorf("lease %q: %w", name, err)
	}
	return got == holder, nil
}

// ReleaseLease gives up lease name if holder has it, so another replica takes it at once
// rather than after the TTL.
func (s *Postgres) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
		return fmt.Errorf("lease %q: %w", name, err)
	}
	return nil
}

// PutArtifact stores an artifact's bytes under its digest; a digest already stored is left as
// it is (its content is the same by definition). The caller has verified the digest.
func (s *Postgres) PutArtifact(ctx context.Context, digest string, data []byte) error {
	if _, err := s.db.ExecContext(ctx, `
INSERT INTO artifacts (digest, data) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING`, digest, notNil(data)); err != nil {
		return fmt.Errorf("artifact %s: %w", digest, err)
	}
	return nil
}

// GetArtifact returns the bytes stored under digest, or ErrNotFound. The caller verifies them.
func (s *Postgres) GetArtifact(ctx context.Context, digest string) ([]byte, error) {
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM artifacts WHERE digest = $1`, digest).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("artifact %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", digest, err)
	}
	return data, nil
}

// ArtifactGracePeriod is how long a stored artifact is kept even when unreferenced: an
// artifact uploaded by a poll while a garbage collection computed what to keep is not
// referenced yet, and must survive that collection.
const ArtifactGracePeriod = 10 * time.Minute

// DeleteArtifactsExcept deletes every stored artifact whose digest is not in keep and that was
// stored more than ArtifactGracePeriod ago, and returns how many it deleted.
func (s *Postgres) DeleteArtifactsExcept(ctx context.Context, keep map[string]bool) (int, error) {
	digests := make([]string, 0, len(keep))
	for d := range keep {
		digests = append(digests, d)
	}
	res, err := s.db.ExecContext(ctx, `
DELETE FROM artifacts WHERE NOT (digest = ANY($1)) AND created_at < now() - $2 * interval '1 microsecond'`,
		digests, ArtifactGracePeriod.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("artifacts: garbage collection: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ShareFiles stores each of files under its name unless a file of that name is stored
// already, and returns the files stored under those names afterwards: the first replica's
// files win, and every replica gets the same ones back.
func (s *Postgres) ShareFiles(ctx context.Context, files map[string][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	// In name order: two replicas offering at once then wait on the same first row, and the
	// second gets all of the first one's files, never a mix (nor a deadlock).
	names := slices.Sorted(maps.Keys(files))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, name := range names {
			if _, err := tx.ExecContext(ctx, `
INSERT INTO shared_files (name, data) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, notNil(files[name])); err != nil {
				return err
			}
		}
		for _, name := range names {
			var data []byte
			if err := tx.QueryRowContext(ctx, `SELECT data FROM shared_files WHERE name = $1`, name).Scan(&data); err != nil {
				return err
			}
			out[name] = data
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: shared files: %w", s.where, err)
	}
	return out, nil
}

// SharedFiles returns the stored files among names (absent ones are missing from the map).
func (s *Postgres) SharedFiles(ctx context.Context, names []string) (map[string][]byte, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, data FROM shared_files WHERE name = ANY($1)`, names)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: shared files: %w", s.where, err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var (
			name string
			data []byte
		)
		if err := rows.Scan(&name, &data); err != nil {
			return nil, fmt.Errorf("postgres store %s: shared files: %w", s.where, err)
		}
		out[name] = data
	}
	return out, rows.Err()
}

// PutSharedFile stores data under name, replacing what was there.
func (s *Postgres) PutSharedFile(ctx context.Context, name string, data []byte) error {
	if _, err := s.db.ExecContext(ctx, `
INSERT INTO shared_files (name, data) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET data = excluded.data`,
		name, notNil(data)); err != nil {
		return fmt.Errorf("postgres store %s: shared file %s: %w", s.where, name, err)
	}
	return nil
}
