package access_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// TestTokens runs the token store's contract on both databases the hub's store uses.
func TestTokens(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) (w, r *sql.DB){
		"sqlite": func(t *testing.T) (w, r *sql.DB) {
			st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st.DB(), st.ReadDB()
		},
		"postgres": func(t *testing.T) (w, r *sql.DB) {
			st, err := store.OpenPostgres(t.Context(), pgtest.NewDatabase(t), store.PostgresOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st.DB(), st.ReadDB()
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testTokens(t, open)
		})
	}
}

func testTokens(t *testing.T, open func(t *testing.T) (w, r *sql.DB)) {
	ctx := t.Context()
	db, ro := open(t)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	ts, err := access.OpenTokens(ctx, db, ro, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := access.OpenTokens(ctx, db, nil, time.Now); err != nil {
		t.Fatalf("opening twice: %v", err)
	}

	ci, ciSecret, err := ts.Create(ctx, access.Token{Name: "ci", Grant: access.Grant{Role: access.Deployer, Projects: []string{"team-a"}}, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ciSecret, access.TokenPrefix) || len(ciSecret) != len(access.TokenPrefix)+43 {
		t.Errorf("secret %q: want flt_ and 43 characters", ciSecret)
	}
	_, rootSecret, err := ts.Create(ctx, access.Token{Name: "root", Grant: access.Grant{Role: access.Admin, Projects: []string{"ignored"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ts.Create(ctx, access.Token{Name: "ci", Grant: access.Grant{Role: access.Viewer}}); !errors.Is(err, access.ErrTokenExists) {
		t.Errorf("a second ci: %v, want ErrTokenExists", err)
	}
	if _, _, err := ts.Create(ctx, access.Token{Name: "admin", Grant: access.Grant{Role: access.Viewer}}); err == nil {
		t.Error("a token named admin was created: that name is the bootstrap token's")
	}

	// Only the hash is stored.
	var stored string
	if err := db.QueryRowContext(ctx, `SELECT secret_hash FROM user_tokens WHERE name = 'ci'`).Scan(&stored); err != nil || strings.Contains(stored, ciSecret[4:]) {
		t.Errorf("stored %q (%v): the secret must not be", stored, err)
	}

	list, err := ts.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []access.Token{ci, {Name: "root", Grant: access.Grant{Role: access.Admin}, CreatedAt: now}}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	p, err := ts.Authenticate(ctx, ciSecret)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(access.Principal{Actor: "token:ci", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}}, p); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	if _, err := ts.Authenticate(ctx, rootSecret+"x"); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("a wrong secret: %v", err)
	}

	// Rotation: the old secret stops working, the new one works, the grant stays.
	_, rotated, err := ts.Rotate(ctx, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Authenticate(ctx, ciSecret); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("the rotated-out secret: %v", err)
	}
	if p, err := ts.Authenticate(ctx, rotated); err != nil || p.Grants[0].Role != access.Deployer {
		t.Errorf("the new secret: %v %v", p, err)
	}

	// Expiry.
	now = now.Add(time.Hour)
	if _, err := ts.Authenticate(ctx, rotated); !errors.Is(err, access.ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired token: %v", err)
	}

	// Revocation.
	if err := ts.Revoke(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Authenticate(ctx, rootSecret); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("a revoked token: %v", err)
	}
	if err := ts.Revoke(ctx, "root"); !errors.Is(err, access.ErrTokenNotFound) {
		t.Errorf("revoking twice: %v", err)
	}
	if _, _, err := ts.Rotate(ctx, "nope"); !errors.Is(err, access.ErrTokenNotFound) {
		t.Errorf("rotating an unknown token: %v", err)
	}
}

// TestBootstrapRefusesShortTokens: an empty admin.token once turned authentication off.
func TestBootstrapRefusesShortTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.token")
	tok, err := access.LoadOrCreateBootstrap(path)
	if err != nil || len(tok) < access.MinBootstrapLength {
		t.Fatalf("first start: %q %v", tok, err)
	}
	if again, err := access.LoadOrCreateBootstrap(path); err != nil || again != tok {
		t.Fatalf("second start: %q %v, want the same token", again, err)
	}
	for _, content := range []string{"", "\n", "  \n", "short-token\n", strings.Repeat("x", access.MinBootstrapLength-1)} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := access.LoadOrCreateBootstrap(path); err == nil || !strings.Contains(err.Error(), "refusing to start") {
			t.Errorf("admin.token %q: %v, want a refusal", content, err)
		}
	}
	// And the authenticator never takes an empty bearer token, whatever it holds.
	a := &access.Authenticator{}
	if _, err := a.Authenticate(context.Background(), ""); !errors.Is(err, access.ErrUnauthenticated) {
		t.Errorf("empty bearer with an empty bootstrap: %v", err)
	}
}

// TestCopyTokens: a hub moved from SQLite to PostgreSQL (hub copy-store) keeps its named
// tokens: the same secret works against the copy.
func TestCopyTokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
	must(t, err)
	defer src.Close()
	dst, err := store.OpenPostgres(ctx, pgtest.NewDatabase(t), store.PostgresOptions{})
	must(t, err)
	defer dst.Close()
	ts, err := access.OpenTokens(ctx, src.DB(), src.ReadDB(), time.Now)
	must(t, err)
	_, secret, err := ts.Create(ctx, access.Token{Name: "ci", Grant: access.Grant{Role: access.Deployer, Projects: []string{"team-a"}}})
	must(t, err)
	n, err := access.CopyTokens(ctx, src.DB(), dst.DB())
	if err != nil || n != 1 {
		t.Fatalf("copied %d: %v", n, err)
	}
	copied, err := access.OpenTokens(ctx, dst.DB(), dst.ReadDB(), time.Now)
	must(t, err)
	if p, err := copied.Authenticate(ctx, secret); err != nil || p.Actor != "token:ci" || p.Grants[0].Projects[0] != "team-a" {
		t.Errorf("the copied token: %+v %v", p, err)
	}
	if _, err := access.CopyTokens(ctx, src.DB(), dst.DB()); err == nil {
		t.Error("a second copy into a store holding tokens was not refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBootstrapByHash: the hub knows the admin token by its hash, so a replica that holds
// only "sha256:..." in admin.token takes the token, and a rotated hash replaces the old one.
func TestBootstrapByHash(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("t", access.MinBootstrapLength)
	sum, err := access.HashBootstrap(tok)
	if err != nil || !access.IsBootstrapHash(sum) {
		t.Fatalf("HashBootstrap: %q %v", sum, err)
	}
	if again, _ := access.HashBootstrap(sum + "\n"); again != sum {
		t.Errorf("the hash of a hash form is %q, want it as it is", again)
	}
	path := filepath.Join(t.TempDir(), "admin.token")
	for _, tt := range []struct {
		file, want string // want: "" the file is taken, else part of the refusal
	}{
		{file: tok + "\n"},
		{file: sum + "\n"},
		{file: "sha256:abcd\n", want: "not sha256: and 64 hex digits"},
		{file: "sha256:" + strings.Repeat("zz", 32), want: "not sha256: and 64 hex digits"},
	} {
		if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
			t.Fatal(err)
		}
		content, err := access.LoadOrCreateBootstrap(path)
		if tt.want != "" {
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("admin.token %q: %v, want a refusal with %q", tt.file, err, tt.want)
			}
			continue
		}
		b, err := access.NewBootstrap(content)
		if err != nil {
			t.Fatalf("admin.token %q: %v", tt.file, err)
		}
		a := &access.Authenticator{Bootstrap: b}
		if p, err := a.Authenticate(t.Context(), tok); err != nil || p.Actor != "token:admin" {
			t.Errorf("admin.token %q: the token: %+v %v", tt.file, p, err)
		}
		for _, bearer := range []string{sum, tok + "x", strings.TrimSuffix(tok, "t")} {
			if _, err := a.Authenticate(t.Context(), bearer); !errors.Is(err, access.ErrUnauthenticated) {
				t.Errorf("admin.token %q: bearer %q: %v, want unauthenticated", tt.file, bearer, err)
			}
		}
		other := strings.Repeat("o", access.MinBootstrapLength)
		if changed, err := b.Set(other); err != nil || !changed || b.Match(tok) || !b.Match(other) {
			t.Errorf("after Set: changed %v %v; old token %v, new %v", changed, err, b.Match(tok), b.Match(other))
		}
	}
}
