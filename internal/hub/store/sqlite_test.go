package store_test

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
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/store/storetest"
)

func TestSQLiteContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
	})
}

// openSQLite opens the store at path; the caller closes it.
func openSQLite(t testing.TB, path string) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is everything a store shows through its interface about clusters a and b.
type snapshot struct {
	Clusters  []store.Cluster
	Desired   []store.DesiredState
	Reports   map[string]int64
	Statuses  []store.AssignmentStatus
	Sources   []store.SourceStatus
	Fleet     store.FleetStatus
	CertValid map[string]bool
}

func takeSnapshot(t *testing.T, ctx context.Context, s store.Store) snapshot {
	t.Helper()
	var (
		snap = snapshot{Reports: map[string]int64{}, CertValid: map[string]bool{}}
		err  error
	)
	snap.Clusters, err = s.ListClusters(ctx)
	must(t, err)
	for _, c := range []string{"a", "b"} {
		d, err := s.GetDesiredState(ctx, c)
		must(t, err)
		snap.Desired = append(snap.Desired, d)
		snap.Reports[c], err = s.ReportsIngested(ctx, c)
		must(t, err)
	}
	snap.Statuses, err = s.ListStatuses(ctx)
	must(t, err)
	snap.Sources, err = s.ListSourceStatuses(ctx)
	must(t, err)
	snap.Fleet, err = s.GetFleetStatus(ctx)
	must(t, err)
	for _, serial := range []string{"01", "02"} {
		snap.CertValid[serial], err = s.CertificateValid(ctx, serial, "a")
		must(t, err)
	}
	return snap
}

func TestSQLiteRestartLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hub.db")
	s := openSQLite(t, path)
	now := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	s.SetNow(func() time.Time { return now })
	populate(t, ctx, s, now)

	before := takeSnapshot(t, ctx, s)
	must(t, s.Close())

	s = openSQLite(t, path)
	defer s.Close()
	after := takeSnapshot(t, ctx, s)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("state after reopening (-before +after):\n%s", diff)
	}
	wantCarriesOn(t, ctx, s, now)
}

// populate gives s two clusters, a and b, with everything a hub stores about them.
func populate(t *testing.T, ctx context.Context, s store.Store, now time.Time) {
	t.Helper()
	for _, c := range []string{"a", "b"} {
		must(t, s.AddCluster(ctx, store.Cluster{Name: c, Labels: map[string]string{"env": "prod", "name": c}, CreatedAt: now}))
		must(t, s.TouchCluster(ctx, c, now.Add(time.Second), "v1.0.0"))
		for _, doc := range []string{"v1", "v2"} {
			_, _, err := s.PutDesiredState(ctx, c, []byte(doc))
			must(t, err)
		}
		for seq := range uint64(3) {
			_, err := s.IngestReport(ctx, c, seq, []store.AssignmentStatus{
				{Release: "web", ObservedGeneration: 2, Phase: "Ready", Detail: []byte(`{"x":1}`), ReportedAt: now.Add(time.Duration(seq) * time.Microsecond)},
			})
			must(t, err)
		}
	}
	must(t, s.SetClusterLabels(ctx, "b", map[string]string{"env": "staging"}))
	must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "used", SecretHash: []byte("h1"), Cluster: "a", ExpiresAt: now.Add(time.Hour)}))
	must(t, s.ConsumeJoinToken(ctx, "used", []byte("h1"), "a", now))
	must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "spare", SecretHash: []byte("h2"), Cluster: "a", ExpiresAt: now.Add(time.Hour)}))
	must(t, s.AddCertificate(ctx, store.Certificate{Serial: "01", Cluster: "a", NotAfter: now.Add(time.Hour)}))
	must(t, s.AddCertificate(ctx, store.Certificate{Serial: "02", Cluster: "a", NotAfter: now.Add(time.Hour), Revoked: true}))
	must(t, s.PutSourceStatus(ctx, store.SourceStatus{Name: "apps", URL: "https://git.example/apps", Revision: "main@sha1:01", CheckedAt: now}))
	must(t, s.PutFleetStatus(ctx, store.FleetStatus{Revision: "main@sha1:02", UpdatedAt: now}))
}

// wantCarriesOn checks that s, holding what populate stored, behaves as the store it was:
// a used token stays used, a spare one works, an ingested report is a duplicate, and the
// stored document keeps its generation.
func wantCarriesOn(t *testing.T, ctx context.Context, s store.Store, now time.Time) {
	t.Helper()
	if err := s.ConsumeJoinToken(ctx, "used", []byte("h1"), "a", now); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("ConsumeJoinToken of a token used before: err = %v, want ErrTokenInvalid", err)
	}
	must(t, s.ConsumeJoinToken(ctx, "spare", []byte("h2"), "a", now))
	dup, err := s.IngestReport(ctx, "a", 2, nil)
	must(t, err)
	if !dup {
		t.Error("a report ingested before is not a duplicate")
	}
	gen, changed, err := s.PutDesiredState(ctx, "a", []byte("v2"))
	must(t, err)
	if gen != 2 || changed {
		t.Errorf("PutDesiredState of the stored document = (%d, %v), want (2, false)", gen, changed)
	}
}

// versions returns the schema versions recorded in the file at path.
func versions(t *testing.T, path string) []int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	must(t, err)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	must(t, err)
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		must(t, rows.Scan(&v))
		vs = append(vs, v)
	}
	must(t, rows.Err())
	return vs
}

// upTo returns 1..n.
func upTo(n int) []int {
	var vs []int
	for v := 1; v <= n; v++ {
		vs = append(vs, v)
	}
	return vs
}

func TestSQLiteMigrations(t *testing.T) {
	t.Parallel()
	t.Run("migrates an empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		must(t, os.WriteFile(path, nil, 0o600))
		s := openSQLite(t, path)
		must(t, s.AddCluster(t.Context(), store.Cluster{Name: "a"}))
		must(t, s.Close())
		if diff := cmp.Diff(upTo(store.SchemaVersion), versions(t, path)); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
	})

	t.Run("migrates a file of an older hub", func(t *testing.T) {
		for n := range store.SchemaVersion {
			path := filepath.Join(t.TempDir(), "hub.db")
			old, err := store.OpenSQLiteAtVersion(t.Context(), path, n)
			must(t, err)
			must(t, old.Close())

			s := openSQLite(t, path)
			must(t, s.AddCluster(t.Context(), store.Cluster{Name: "a"}))
			must(t, s.Close())
			if diff := cmp.Diff(upTo(store.SchemaVersion), versions(t, path)); diff != "" {
				t.Errorf("from version %d: versions (-want +got):\n%s", n, diff)
			}
		}
	})

	t.Run("a newer hub migrates this hub's file and keeps its data", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s := openSQLite(t, path)
		must(t, s.AddCluster(t.Context(), store.Cluster{Name: "a", Labels: map[string]string{"k": "v"}}))
		must(t, s.Close())

		newer, err := store.OpenSQLiteWithExtraMigrations(t.Context(), path,
			`ALTER TABLE clusters ADD COLUMN note TEXT NOT NULL DEFAULT ''`)
		must(t, err)
		c, err := newer.GetCluster(t.Context(), "a")
		must(t, err)
		must(t, newer.Close())
		if c.Labels["k"] != "v" {
			t.Errorf("cluster after migration = %+v, want its labels kept", c)
		}
		if diff := cmp.Diff(upTo(store.SchemaVersion+1), versions(t, path)); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
	})

	t.Run("refuses a file of a newer hub", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s := openSQLite(t, path)
		must(t, s.AddCluster(t.Context(), store.Cluster{Name: "a"}))
		must(t, s.Close())
		db, err := sql.Open("sqlite", path)
		must(t, err)
		_, err = db.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)`)
		must(t, err)
		must(t, db.Close())

		_, err = store.OpenSQLite(t.Context(), path)
		if err == nil {
			t.Fatal("OpenSQLite of a newer file succeeded")
		}
		for _, want := range []string{path, "99", "newer"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if diff := cmp.Diff(append(upTo(store.SchemaVersion), 99), versions(t, path)); diff != "" {
			t.Errorf("versions after refusal (-want +got):\n%s", diff)
		}
	})

	t.Run("a failing step changes nothing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s := openSQLite(t, path)
		must(t, s.Close())
		_, err := store.OpenSQLiteWithExtraMigrations(t.Context(), path,
			`CREATE TABLE extra (id INTEGER PRIMARY KEY)`,
			`INSERT INTO no_such_table VALUES (1)`)
		if err == nil || !strings.Contains(err.Error(), "no_such_table") {
			t.Fatalf("OpenSQLite with a failing step: err = %v, want the step's error", err)
		}
		if diff := cmp.Diff(upTo(store.SchemaVersion), versions(t, path)); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
		db, err := sql.Open("sqlite", path)
		must(t, err)
		defer db.Close()
		var n int
		must(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name = 'extra'`).Scan(&n))
		if n != 0 {
			t.Error("table of the first step exists after the second failed")
		}
	})
}

func TestSQLiteConnections(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
	defer s.Close()
	w, r := s.Pools()
	for _, tc := range []struct {
		pool         *sql.DB
		name, pragma string
		want         string
	}{
		{w, "writer", "journal_mode", "wal"},
		{w, "writer", "foreign_keys", "1"},
		{w, "writer", "busy_timeout", "10000"},
		{w, "writer", "synchronous", "2"},
		{r, "reader", "journal_mode", "wal"},
		{r, "reader", "foreign_keys", "1"},
		{r, "reader", "busy_timeout", "10000"},
		{r, "reader", "query_only", "1"},
	} {
		var got string
		must(t, tc.pool.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got))
		if got != tc.want {
			t.Errorf("%s: PRAGMA %s = %s, want %s", tc.name, tc.pragma, got, tc.want)
		}
	}
	if got := w.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer pool allows %d connections, want 1", got)
	}
}

func TestOpenSQLitePaths(t *testing.T) {
	t.Run("keeps special characters in the file name", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "hub ?x=1#y%20.db")
		s := openSQLite(t, path)
		must(t, s.Close())
		if _, err := os.Stat(path); err != nil {
			t.Errorf("database not at %q: %v", path, err)
		}
	})
	t.Run("a relative path", func(t *testing.T) {
		t.Chdir(t.TempDir())
		s := openSQLite(t, "hub.db")
		must(t, s.Close())
		if _, err := os.Stat("hub.db"); err != nil {
			t.Errorf("database not at hub.db: %v", err)
		}
	})
	missing := filepath.Join(t.TempDir(), "no", "such", "hub.db")
	for _, tc := range []struct {
		name, path string
		want       string // the whole error: what the user reads
	}{
		{"refuses an empty path", "", `sqlite store : sqlite file "": a file path is required`},
		{"refuses an in-memory database", ":memory:", `sqlite store :memory:: sqlite file ":memory:": a file path is required`},
		{"fails in a missing directory", missing, "sqlite store " + missing + ": unable to open database file (14)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := store.OpenSQLite(t.Context(), tc.path)
			if err == nil {
				s.Close()
				t.Fatalf("OpenSQLite(%q) succeeded", tc.path)
			}
			if err.Error() != tc.want {
				t.Errorf("OpenSQLite(%q) error:\n got %q\nwant %q", tc.path, err, tc.want)
			}
		})
	}
}

func TestSQLiteStampsTimesWithItsClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
	defer s.Close()
	now := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	s.SetNow(func() time.Time { return now })
	must(t, s.AddCluster(ctx, store.Cluster{Name: "a"}))
	_, _, err := s.PutDesiredState(ctx, "a", []byte("x"))
	must(t, err)
	_, err = s.IngestReport(ctx, "a", 1, []store.AssignmentStatus{{Release: "web", UpdatedAt: now.Add(-time.Hour)}})
	must(t, err)

	d, err := s.GetDesiredState(ctx, "a")
	must(t, err)
	sts, err := s.ListStatuses(ctx)
	must(t, err)
	want := []time.Time{now, now}
	got := []time.Time{d.UpdatedAt, sts[0].UpdatedAt}
	if diff := cmp.Diff(want, got, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("UpdatedAt of desired state and status (-want +got):\n%s", diff)
	}

	// An unchanged document does not move UpdatedAt: it records the last change.
	s.SetNow(func() time.Time { return now.Add(time.Hour) })
	_, _, err = s.PutDesiredState(ctx, "a", []byte("x"))
	must(t, err)
	d, err = s.GetDesiredState(ctx, "a")
	must(t, err)
	if !d.UpdatedAt.Equal(now) {
		t.Errorf("UpdatedAt after an unchanged Put = %v, want %v", d.UpdatedAt, now)
	}
}
