package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CreateJoinToken stores t (ErrExists if its ID is taken). The cluster need not be registered
// yet.
func (s *sqlStore) CreateJoinToken(ctx context.Context, t JoinToken) error {
	res, err := s.db.ExecContext(ctx, `
INSERT INTO join_tokens (id, secret_hash, cluster, expires_at, used_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING`,
		t.ID, notNil(t.SecretHash), t.Cluster, s.d.time(t.ExpiresAt), s.d.nullTime(t.UsedAt))
	if err != nil {
		return fmt.Errorf("join token %q: %w", t.ID, err)
	}
	if err := oneRow(res, ErrExists); err != nil {
		return fmt.Errorf("join token %q: %w", t.ID, err)
	}
	return nil
}

// ConsumeJoinToken marks token id used at now if secretHash matches, it was issued for
// cluster, is unused and now is before its expiry; otherwise it returns ErrTokenInvalid
// wrapped with the reason.
//
// The secret is compared first, by a read: attempts without it never serialize writers. Then
// the token is read FOR UPDATE (PostgreSQL) and the UPDATE repeats "unused and unexpired" and
// must change one row: single use, even with two hubs on one SQLite file.
func (s *sqlStore) ConsumeJoinToken(ctx context.Context, id string, secretHash []byte, cluster string, now time.Time) error {
	var hash []byte
	if err := s.ro.QueryRowContext(ctx, `SELECT secret_hash FROM join_tokens WHERE id = $1`, id).Scan(&hash); err != nil || subtle.ConstantTimeCompare(hash, secretHash) != 1 {
		if err == nil || errors.Is(err, sql.ErrNoRows) {
			err = fmt.Errorf("unknown, or its secret does not match: %w", ErrTokenInvalid)
		}
		return fmt.Errorf("join token %q: %w", id, err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var issuedFor string
		var expiresAt, usedAt nullTime
		err := tx.QueryRowContext(ctx, `
SELECT cluster, expires_at, used_at FROM join_tokens WHERE id = $1`+s.d.forLock("UPDATE"), id).Scan(&issuedFor, &expiresAt, &usedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("unknown: %w", ErrTokenInvalid)
		}
		if err != nil {
			return err
		}
		if issuedFor != cluster {
			return fmt.Errorf("issued for cluster %q, not %q: %w", issuedFor, cluster, ErrTokenInvalid)
		}
		if usedAt.Valid {
			return fmt.Errorf("already used at %s: %w", usedAt.Time.Format(time.RFC3339), ErrTokenInvalid)
		}
		// Compared at the precision the database keeps, as the UPDATE compares.
		if s.d.compareTimes(now, expiresAt.Time) >= 0 {
			return fmt.Errorf("expired at %s: %w", expiresAt.Time.Format(time.RFC3339), ErrTokenInvalid)
		}
		res, err := tx.ExecContext(ctx, `
UPDATE join_tokens SET used_at = $1
WHERE id = $2 AND cluster = $3 AND used_at IS NULL AND expires_at > $1`,
			s.d.instant(now), id, cluster)
		if err != nil {
			return err
		}
		return oneRow(res, fmt.Errorf("already used: %w", ErrTokenInvalid))
	})
	if err != nil {
		return fmt.Errorf("join token %q: %w", id, err)
	}
	return nil
}

// AddCertificate records a certificate the hub signed; ErrExists if its serial is recorded.
func (s *sqlStore) AddCertificate(ctx context.Context, c Certificate) error {
	res, err := s.db.ExecContext(ctx, `
INSERT INTO certificates (serial, cluster, not_after, revoked) VALUES ($1, $2, $3, $4)
ON CONFLICT (serial) DO NOTHING`,
		c.Serial, c.Cluster, s.d.time(c.NotAfter), c.Revoked)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", c.Serial, err)
	}
	if err := oneRow(res, ErrExists); err != nil {
		return fmt.Errorf("certificate %s: %w", c.Serial, err)
	}
	return nil
}

// CertificateValid reports whether serial was issued to cluster and is not revoked. Unknown
// serials are not valid. Expiry (NotAfter) is left to the TLS handshake.
func (s *sqlStore) CertificateValid(ctx context.Context, serial, cluster string) (bool, error) {
	var one int
	err := s.ro.QueryRowContext(ctx, `
SELECT 1 FROM certificates WHERE serial = $1 AND cluster = $2 AND revoked = false`, serial, cluster).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("certificate %s: %w", serial, err)
	}
	return true, nil
}

// RevokeCertificates revokes the cluster's certificate serial, or all of them for serial "".
func (s *sqlStore) RevokeCertificates(ctx context.Context, cluster, serial string) (int64, error) {
	return s.count(s.db.ExecContext(ctx, `UPDATE certificates SET revoked = true
WHERE cluster = $1 AND ($2 = '' OR serial = $2) AND revoked = false`, cluster, serial))
}

// RevokeJoinTokens makes the cluster's unused join tokens expire at now; used ones are history.
func (s *sqlStore) RevokeJoinTokens(ctx context.Context, cluster string, now time.Time) (int64, error) {
	return s.count(s.db.ExecContext(ctx, `UPDATE join_tokens SET expires_at = $1
WHERE cluster = $2 AND used_at IS NULL AND expires_at > $3`, s.d.time(now), cluster, s.d.instant(now)))
}
func (s *sqlStore) count(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
