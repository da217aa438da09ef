package replica

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// testHash stands in for the hub's hash of admin.token: a hash form is kept as it is.
func testHash(data []byte) ([]byte, error) {
	if bytes.HasPrefix(data, []byte("hash:")) {
		return data, nil
	}
	return append([]byte("hash:"), bytes.ToUpper(bytes.TrimSpace(data))...), nil
}

// A hashed identity file reaches the store as its hash only, whatever the row held before
// (the file in clear, from before sealing, or sealed, from before hashing): the row is
// replaced by the hash, the data dir that made the file keeps it, and one that joins, or
// held another, gets the hash. Nothing sent to the store holds the file in clear, not even a
// row that is hashed right after.
func TestHashedIdentityFiles(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	for _, tt := range []struct {
		name string
		row  func(t *testing.T) []byte // what the store holds before; nil: nothing
	}{
		{name: "new store"},
		{name: "row in clear", row: func(*testing.T) []byte { return []byte("the-token\n") }},
		{name: "sealed row", row: func(t *testing.T) []byte {
			sealed, err := seal(key, "admin.token", []byte("the-token\n"))
			if err != nil {
				t.Fatal(err)
			}
			return sealed
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			st, err := store.OpenPostgres(ctx, pgtest.NewDatabase(t), store.PostgresOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if tt.row != nil {
				if _, err := st.ShareFiles(ctx, map[string][]byte{"admin.token": tt.row(t)}); err != nil {
					t.Fatal(err)
				}
			}
			identity := func(dir, content string) Identity {
				return Identity{DataDir: dir, Files: []string{"admin.token"}, Hashed: []string{"admin.token"}, Hash: testHash,
					Create: func() error {
						path := filepath.Join(dir, "admin.token")
						if _, err := os.Stat(path); err == nil {
							return nil
						}
						return os.WriteFile(path, []byte(content), 0o600)
					}}
			}
			first := t.TempDir()
			if tt.row == nil {
				// This data dir makes the token; otherwise it holds another, which gives way.
				if err := os.WriteFile(filepath.Join(first, "admin.token"), []byte("the-token\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			joiner := t.TempDir()
			rec := &recordingStore{SharedStore: st}
			for _, dir := range []string{first, joiner} {
				if err := shareIdentity(ctx, rec, identity(dir, "another-token\n"), key, slog.New(slog.DiscardHandler)); err != nil {
					t.Fatal(err)
				}
			}
			// Not even for a moment: a row replaced later still sits in the database's files and
			// its write-ahead log (and so in backups) until vacuumed.
			for _, w := range rec.sent {
				if bytes.Contains(w, []byte("the-token")) || bytes.Contains(w, []byte("another-token")) {
					t.Errorf("the store was sent %q, a token in clear", w)
				}
			}
			rows, err := st.SharedFiles(ctx, []string{"admin.token"})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(rows["admin.token"]); got != "hash:THE-TOKEN" {
				t.Errorf("stored row %q, want the hash of the token only", got)
			}
			wantFirst := "hash:THE-TOKEN\n"
			if tt.row == nil {
				wantFirst = "the-token\n"
			}
			for dir, want := range map[string]string{first: wantFirst, joiner: "hash:THE-TOKEN\n"} {
				got, err := os.ReadFile(filepath.Join(dir, "admin.token"))
				if err != nil || string(got) != want {
					t.Errorf("%s/admin.token: %q %v, want %q", dir, got, err, want)
				}
			}
		})
	}
}

// recordingStore records every file value sent to the store (offered or put).
type recordingStore struct {
	SharedStore
	sent [][]byte
}

func (r *recordingStore) ShareFiles(ctx context.Context, files map[string][]byte) (map[string][]byte, error) {
	for _, data := range files {
		r.sent = append(r.sent, data)
	}
	return r.SharedStore.ShareFiles(ctx, files)
}

func (r *recordingStore) PutSharedFile(ctx context.Context, name string, data []byte) error {
	r.sent = append(r.sent, data)
	return r.SharedStore.PutSharedFile(ctx, name, data)
}
