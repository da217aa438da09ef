package hub

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/flotilla/flotilla/internal/hub/store"
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

// The store shared by replicas holds no usable secret without the key file: the CA key and
// the admin token are sealed. A replica with the key file gets them; one without it, or with
// another key, is refused with an error that says what to do.
func TestSharedSecretsAreSealedInTheStore(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	r1 := startReplica(t, dsn, t.TempDir(), "replica-1")
	token := r1.AdminToken()
	checkNoSecretInRows(t, sharedRows(t, dsn), token)

	r2 := startReplica(t, dsn, t.TempDir(), "replica-2")
	if r2.AdminToken() != token {
		t.Errorf("replica-2 has another admin token than replica-1")
	}

	for _, tt := range []struct {
		name string
		rep  ReplicaOptions
		want string
	}{{
		name: "no key file",
		rep:  ReplicaOptions{ID: "replica-3"},
		want: "needs --secrets-key-file: the CA key and admin token the replicas share are kept sealed in the store",
	}, {
		name: "another key",
		rep:  ReplicaOptions{ID: "replica-4", SecretsKeyFile: testSecretsKeyFile(t, strings.Repeat("ab", 32))},
		// Whichever shared secret is opened first (the CA key or the admin token) is named.
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
// first replica started with the key file seals them in place, and keeps that CA.
func TestPlaintextSharedSecretsAreSealedOnStart(t *testing.T) {
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

	r := startReplica(t, dsn, t.TempDir(), "replica-1")
	checkNoSecretInRows(t, sharedRows(t, dsn), token)
	if r.AdminToken() != token {
		t.Errorf("the replica has a new admin token, not the stored one")
	}
	got, err := os.ReadFile(filepath.Join(r.opts.DataDir, pki.CAKeyFile))
	if err != nil || !bytes.Equal(got, files[pki.CAKeyFile]) {
		t.Errorf("the replica's CA key is not the stored one (%v)", err)
	}
}
