package hub

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pgtest"
	"github.com/flotilla/flotilla/internal/pki"
)

// testSecretsKey is the secrets key every test replica shares.
const testSecretsKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// testSecretsKeyFile writes key (testSecretsKey if none) into a file for --secrets-key-file.
func testSecretsKeyFile(t testing.TB, key ...string) string {
	t.Helper()
	k := testSecretsKey
	if len(key) > 0 {
		k = key[0]
	}
	path := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(path, []byte(k+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedRows reads the shared_files rows straight from the database, as whoever holds a
// dump of it would.
func sharedRows(t *testing.T, dsn string) map[string][]byte {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT name, data FROM shared_files`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var name string
		var data []byte
		if err := rows.Scan(&name, &data); err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordSharedWrites has the database keep every value written to shared_files (inserted or
// updated), as its files and write-ahead log do until vacuumed, and so its backups. The
// returned function reads them, keyed "name #n".
func recordSharedWrites(t *testing.T, dsn string) func() map[string][]byte {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{}) // creates the tables
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE shared_file_writes (n serial, name text, data bytea)`,
		`CREATE FUNCTION record_shared_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO shared_file_writes (name, data) VALUES (NEW.name, NEW.data); RETURN NEW; END $$`,
		`CREATE TRIGGER record_shared_write AFTER INSERT OR UPDATE ON shared_files FOR EACH ROW EXECUTE FUNCTION record_shared_write()`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	return func() map[string][]byte {
		rows, err := db.QueryContext(t.Context(), `SELECT n, name, data FROM shared_file_writes`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]byte{}
		for rows.Next() {
			var n int
			var name string
			var data []byte
			if err := rows.Scan(&n, &name, &data); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s #%d", name, n)] = data
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// checkNoSecretInRows fails if a row holds a PEM private key or the admin token in clear.
func checkNoSecretInRows(t *testing.T, rows map[string][]byte, token string) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatal("no shared_files rows")
	}
	for name, data := range rows {
		if bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Errorf("row %s holds a PEM private key in clear", name)
		}
		if bytes.Contains(data, []byte(token)) {
			t.Errorf("row %s holds the admin token in clear", name)
		}
	}
}

func newReplicaHub(t *testing.T, dsn string, rep ReplicaOptions) (*Hub, error) {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(t.TempDir(), "data")
	return New(t.Context(), Options{DataDir: dir, Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		AllowFileSources: []string{os.TempDir()}, Replica: rep}, st)
}

// checkTokenHashed fails unless the store keeps the admin token as its SHA-256 only.
func checkTokenHashed(t *testing.T, rows map[string][]byte, token string) {
	t.Helper()
	sum := sha256.Sum256([]byte(token))
	if want := "sha256:" + hex.EncodeToString(sum[:]); string(rows[AdminTokenFile]) != want {
		t.Errorf("the store's %s row is %.40q..., want the token's hash %s", AdminTokenFile, rows[AdminTokenFile], want)
	}
}

// The store shared by replicas holds no usable secret without the key file: the CA key is
// sealed, and of the admin token it keeps only the hash, and neither was ever written in clear. A replica with the key file gets the
// CA, and takes the first replica's token knowing only its hash; one without the key file, or
// with another key, is refused with an error that says what to do.
func TestSharedSecretsAreSealedInTheStore(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	writes := recordSharedWrites(t, dsn)
	r1 := startReplica(t, dsn, t.TempDir(), "replica-1")
	token := r1.AdminToken()
	rows := sharedRows(t, dsn)
	checkNoSecretInRows(t, rows, token)
	checkTokenHashed(t, rows, token)
	// Nor was any value written in clear and sealed or hashed after: the row it replaced stays
	// in the database's files and WAL.
	checkNoSecretInRows(t, writes(), token)

	r2 := startReplica(t, dsn, t.TempDir(), "replica-2")
	if _, err := r2.api.Releases(t.Context()); err != nil {
		t.Errorf("replica-1's admin token on replica-2: %v", err)
	}
	onDisk, err := os.ReadFile(filepath.Join(r2.opts.DataDir, AdminTokenFile))
	if err != nil || !bytes.Equal(bytes.TrimSpace(onDisk), rows[AdminTokenFile]) {
		t.Errorf("replica-2's admin.token holds %q (%v), want the hash the store keeps", onDisk, err)
	}

	for _, tt := range []struct {
		name string
		rep  ReplicaOptions
		want string
	}{{
		name: "no key file",
		rep:  ReplicaOptions{ID: "replica-3"},
		want: "needs --secrets-key-file: the CA key the replicas share is kept sealed in the store",
	}, {
		name: "another key",
		rep:  ReplicaOptions{ID: "replica-4", SecretsKeyFile: testSecretsKeyFile(t, strings.Repeat("ab", 32))},
		want: "in the store cannot be opened with this --secrets-key-file: it was sealed with another key (every replica needs the same key file)",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newReplicaHub(t, dsn, tt.rep)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A store written by a hub from before sealing holds the CA key and admin token in clear: the
// first replica started with the key file seals the CA key in place and keeps only the
// token's hash, and keeps that CA and token.
func TestPlaintextSharedSecretsAreSealedOnStart(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	old := t.TempDir()
	if _, err := pki.LoadOrCreateCA(old, time.Now()); err != nil {
		t.Fatal(err)
	}
	token, err := loadOrCreateToken(filepath.Join(old, AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	files := map[string][]byte{}
	for _, name := range []string{pki.CACertFile, pki.CAKeyFile, AdminTokenFile} {
		if files[name], err = os.ReadFile(filepath.Join(old, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.ShareFiles(t.Context(), files); err != nil {
		t.Fatal(err)
	}

	replicaTokens.Store(databaseOf(st), token) // the old hub's token, for startReplica's client
	r := startReplica(t, dsn, t.TempDir(), "replica-1")
	rows := sharedRows(t, dsn)
	checkNoSecretInRows(t, rows, token)
	checkTokenHashed(t, rows, token)
	if _, err := r.api.Releases(t.Context()); err != nil {
		t.Errorf("the stored admin token on the replica: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(r.opts.DataDir, pki.CAKeyFile))
	if err != nil || !bytes.Equal(got, files[pki.CAKeyFile]) {
		t.Errorf("the replica's CA key is not the stored one (%v)", err)
	}
}

// A leaked or lost admin token is replaced without stopping the replicas: rotate-admin-token
// stores the new token's hash, and every running replica takes it at once, refusing the old
// token from then on. A single hub's store is refused with what to do instead.
func TestRotateAdminToken(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	r1 := startReplica(t, dsn, t.TempDir(), "replica-1")
	r2 := startReplica(t, dsn, t.TempDir(), "replica-2")
	old := r1.AdminToken()

	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	tok, err := RotateAdminToken(t.Context(), st, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, AdminTokenFile)); err != nil || strings.TrimSpace(string(got)) != tok {
		t.Errorf("--data-dir's admin.token: %q %v, want the new token", got, err)
	}
	checkTokenHashed(t, sharedRows(t, dsn), tok)
	for _, r := range []*hubReplica{r1, r2} {
		client := func(token string) *hubclient.Client {
			c, err := hubclient.NewClient(hubclient.Config{Hub: r.APIURL(), Token: token, CAFile: r.CAPath()})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		eventually.Within(t, time.Minute, func() error {
			_, err := client(old).Releases(t.Context())
			var status *hubclient.StatusError
			if !errors.As(err, &status) || status.Code != http.StatusUnauthorized {
				return fmt.Errorf("%s answers the old admin token with %v, want 401", r.opts.Replica.ID, err)
			}
			return nil
		})
		if _, err := client(tok).Releases(t.Context()); err != nil {
			t.Errorf("%s: the new admin token: %v", r.opts.Replica.ID, err)
		}
	}
	// replica-1 made the old token: its admin.token now holds the new hash instead.
	if got, _ := os.ReadFile(filepath.Join(r1.opts.DataDir, AdminTokenFile)); !bytes.HasPrefix(got, []byte("sha256:")) {
		t.Errorf("replica-1's admin.token still holds %.12q..., not the new token's hash", got)
	}

	single, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if _, err := RotateAdminToken(t.Context(), single, ""); err == nil || !strings.Contains(err.Error(), "delete admin.token in its data dir") {
		t.Errorf("rotating a single hub's token: %v, want a refusal that says what to do", err)
	}
}
