package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Token is a named token as stored: never its secret.
type Token struct {
	Name  string `json:"name"`
	Grant Grant  `json:"grant"`
	// CreatedAt is when the token was created or last rotated.
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when it stops working; zero: never.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// Errors of Tokens.
var (
	ErrTokenExists   = errors.New("a token of that name exists")
	ErrTokenNotFound = errors.New("no token of that name")
	// ErrUnauthenticated: the secret is no token's, or its token expired.
	ErrUnauthenticated = errors.New("unknown or expired token")
)

// TokenPrefix starts every token the hub issues, so that a leaked one is recognisable.
const TokenPrefix = "flt_"

// Tokens is the store of named tokens: a table of its own (user_tokens) in a database of
// either kind the hub's store uses.
type Tokens struct {
	db, ro *sql.DB // writes; reads (every authenticated request reads, so not SQLite's one writer)
	now    func() time.Time
}

// tokensTable is the same text for SQLite and PostgreSQL: times are unix nanoseconds (0:
// none), the grant's projects a JSON array.
const tokensTable = `
CREATE TABLE IF NOT EXISTS user_tokens (
	name        TEXT PRIMARY KEY,
	secret_hash TEXT NOT NULL UNIQUE,
	role        TEXT NOT NULL,
	projects    TEXT NOT NULL,
	created_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL
)`

// OpenTokens creates the tokens table in db if it does not exist; reads go to ro (nil: db).
// now stamps creations and is compared with expiries.
func OpenTokens(ctx context.Context, db, ro *sql.DB, now func() time.Time) (*Tokens, error) {
	if ro == nil {
		ro = db
	}
	if _, err := db.ExecContext(ctx, tokensTable); err != nil {
		// Two PostgreSQL replicas creating it at once: one fails, and finds it made.
		var one int
		if err2 := db.QueryRowContext(ctx, `SELECT count(*) FROM user_tokens`).Scan(&one); err2 != nil {
			return nil, fmt.Errorf("user tokens table: %w", err)
		}
	}
	return &Tokens{db: db, ro: ro, now: now}, nil
}

// NewSecret returns a new token secret.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ValidateName checks a token name: a DNS-1123 label, and not "admin" (the bootstrap token's).
func ValidateName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("token name %q: %s", name, strings.Join(errs, "; "))
	}
	if name == BootstrapName {
		return fmt.Errorf("token name %q: reserved for the bootstrap token in admin.token", name)
	}
	return nil
}

// Create stores a new token t (CreatedAt is set here) and returns its secret, which is not
// kept: ErrTokenExists if the name is taken.
func (ts *Tokens) Create(ctx context.Context, t Token) (Token, string, error) {
	if err := ValidateName(t.Name); err != nil {
		return Token{}, "", err
	}
	if _, err := ParseRole(string(t.Grant.Role)); err != nil {
		return Token{}, "", err
	}
	if t.Grant.Role == Admin {
		t.Grant.Projects = nil
	}
	secret, err := NewSecret()
	if err != nil {
		return Token{}, "", err
	}
	projects, err := json.Marshal(nonNil(t.Grant.Projects))
	if err != nil {
		return Token{}, "", err
	}
	t.CreatedAt = ts.now().UTC()
	res, err := ts.db.ExecContext(ctx, `
INSERT INTO user_tokens (name, secret_hash, role, projects, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (name) DO NOTHING`, t.Name, hashSecret(secret), string(t.Grant.Role), string(projects), t.CreatedAt.UnixNano(), nanos(t.ExpiresAt))
	if err != nil {
		return Token{}, "", fmt.Errorf("token %q: %w", t.Name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return Token{}, "", fmt.Errorf("token %q: %w", t.Name, errors.Join(err, ErrTokenExists))
	}
	return t, secret, nil
}

// List returns every token, by name.
func (ts *Tokens) List(ctx context.Context) ([]Token, error) {
	rows, err := ts.ro.QueryContext(ctx, `SELECT name, role, projects, created_at, expires_at FROM user_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Revoke deletes the named token: ErrTokenNotFound if there is none.
func (ts *Tokens) Revoke(ctx context.Context, name string) error {
	res, err := ts.db.ExecContext(ctx, `DELETE FROM user_tokens WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("token %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("token %q: %w", name, errors.Join(err, ErrTokenNotFound))
	}
	return nil
}

// Rotate gives the named token a new secret, which it returns; the old one stops working.
// Its grant and expiry stay; CreatedAt becomes now.
func (ts *Tokens) Rotate(ctx context.Context, name string) (Token, string, error) {
	secret, err := NewSecret()
	if err != nil {
		return Token{}, "", err
	}
	res, err := ts.db.ExecContext(ctx, `UPDATE user_tokens SET secret_hash = $1, created_at = $2 WHERE name = $3`,
		hashSecret(secret), ts.now().UnixNano(), name)
	if err != nil {
		return Token{}, "", fmt.Errorf("token %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return Token{}, "", fmt.Errorf("token %q: %w", name, errors.Join(err, ErrTokenNotFound))
	}
	t, err := scanToken(ts.db.QueryRowContext(ctx, `SELECT name, role, projects, created_at, expires_at FROM user_tokens WHERE name = $1`, name))
	return t, secret, err
}

// Authenticate returns the principal of the token whose secret this is:
// ErrUnauthenticated if there is none or it expired. The secret is looked up by its
// SHA-256, so no comparison of secrets takes place.
func (ts *Tokens) Authenticate(ctx context.Context, secret string) (Principal, error) {
	t, err := scanToken(ts.ro.QueryRowContext(ctx, `SELECT name, role, projects, created_at, expires_at FROM user_tokens WHERE secret_hash = $1`, hashSecret(secret)))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	if !t.ExpiresAt.IsZero() && !ts.now().Before(t.ExpiresAt) {
		return Principal{}, fmt.Errorf("token %q expired at %s: %w", t.Name, t.ExpiresAt.Format(time.RFC3339), ErrUnauthenticated)
	}
	return Principal{Actor: "token:" + t.Name, Grants: []Grant{t.Grant}}, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanToken(row scanner) (Token, error) {
	var (
		t                  Token
		role, projects     string
		created, expiresAt int64
	)
	if err := row.Scan(&t.Name, &role, &projects, &created, &expiresAt); err != nil {
		return Token{}, err
	}
	t.Grant.Role = Role(role)
	if err := json.Unmarshal([]byte(projects), &t.Grant.Projects); err != nil {
		return Token{}, fmt.Errorf("token %q: projects: %w", t.Name, err)
	}
	if len(t.Grant.Projects) == 0 {
		t.Grant.Projects = nil
	}
	t.CreatedAt = time.Unix(0, created).UTC()
	if expiresAt != 0 {
		t.ExpiresAt = time.Unix(0, expiresAt).UTC()
	}
	return t, nil
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CopyTokens copies every named token of the database src into dst (creating its table),
// hashes as they are, and returns how many; for `flotilla hub copy-store`, which moves a hub
// from SQLite to PostgreSQL. dst must hold no token yet.
func CopyTokens(ctx context.Context, src, dst *sql.DB) (int64, error) {
	if _, err := OpenTokens(ctx, src, nil, time.Now); err != nil {
		return 0, err
	}
	if _, err := OpenTokens(ctx, dst, nil, time.Now); err != nil {
		return 0, err
	}
	var n int64
	if err := dst.QueryRowContext(ctx, `SELECT count(*) FROM user_tokens`).Scan(&n); err != nil {
		return 0, fmt.Errorf("user tokens: %w", err)
	}
	if n > 0 {
		return 0, fmt.Errorf("user tokens: the destination already holds %d", n)
	}
	rows, err := src.QueryContext(ctx, `SELECT name, secret_hash, role, projects, created_at, expires_at FROM user_tokens`)
	if err != nil {
		return 0, fmt.Errorf("user tokens: %w", err)
	}
	defer rows.Close()
	tx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for rows.Next() {
		var (
			name, hash, role, projects string
			created, expires           int64
		)
		if err := rows.Scan(&name, &hash, &role, &projects, &created, &expires); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO user_tokens (name, secret_hash, role, projects, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			name, hash, role, projects, created, expires); err != nil {
			return 0, fmt.Errorf("user token %q: %w", name, err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
