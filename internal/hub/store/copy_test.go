package store_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/store/storecopy"
	"github.com/flotilla/flotilla/internal/pgtest"
)

func TestCopyToPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src := openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
	defer src.Close()
	// Microseconds: what PostgreSQL keeps.
	now := time.Date(2031, 1, 2, 3, 4, 5, 6000, time.UTC)
	src.SetNow(func() time.Time { return now })
	populate(t, ctx, src, now)
	must(t, src.RecordCompacted(ctx, "a", 2, 5))
	must(t, src.AddCluster(ctx, store.Cluster{Name: "never-seen"})) // zero times throughout
	checkpoint := audit.Checkpoint{Revision: "r1", Digest: "sha256:1", Phase: "Ready", Since: now, ChainedAt: now,
		FirstVerified: now.Add(time.Minute), LastVerified: now.Add(2 * time.Minute), Count: 2}
	keep := func(audit.Checkpoint, bool) (audit.Checkpoint, bool, error) { return checkpoint, true, nil }
	must(t, src.UpdateAuditCheckpoint(ctx, "a", "web", keep))
	_, err := src.PutRecord(ctx, store.Record{Kind: "rollout", Key: "web", Data: []byte(`{"wave":1}`)}, 0)
	must(t, err)

	dst := openPostgres(t, pgtest.NewDatabase(t))
	defer dst.Close()
	stats, err := storecopy.ToPostgres(ctx, src, dst)
	must(t, err)
	want := storecopy.Stats{"clusters": 3, "join_tokens": 2, "certificates": 2, "desired_states": 2, "reports": 6,
		"statuses": 2, "source_statuses": 1, "fleet_status": 1, "compactions": 1,
		"audit_checkpoints": 1, "records": 1}
	if diff := cmp.Diff(want, stats); diff != "" {
		t.Errorf("rows copied (-want +got):\n%s", diff)
	}
	for _, s := range []store.Store{src, dst} {
		if r, err := s.GetRecord(ctx, "rollout", "web"); err != nil || string(r.Data) != `{"wave":1}` || r.Version != 1 || !r.UpdatedAt.Equal(now) {
			t.Errorf("record after the copy: %+v, %v", r, err)
		}
	}
	if diff := cmp.Diff(takeSnapshot(t, ctx, src), takeSnapshot(t, ctx, dst)); diff != "" {
		t.Errorf("PostgreSQL after the copy (-sqlite +postgres):\n%s", diff)
	}
	for _, c := range []string{"a", "b", "never-seen"} {
		a, err := src.ReportStats(ctx, c)
		must(t, err)
		b, err := dst.ReportStats(ctx, c)
		must(t, err)
		if a != b {
			t.Errorf("ReportStats(%s): sqlite %+v, postgres %+v", c, a, b)
		}
	}
	must(t, dst.UpdateAuditCheckpoint(ctx, "a", "web", func(got audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
		if diff := cmp.Diff(checkpoint, got); !ok || diff != "" {
			t.Errorf("audit checkpoint after the copy (found %v) (-sqlite +postgres):\n%s", ok, diff)
		}
		return got, ok, nil
	}))
	wantCarriesOn(t, ctx, dst, now)

	if _, err := storecopy.ToPostgres(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("a second copy into the same database: err = %v, want a refusal", err)
	}
}

// TestCopyCoversEveryTable fails when a migration adds a table of hub state that
// storecopy.ToPostgres does not copy.
func TestCopyCoversEveryTable(t *testing.T) {
	t.Parallel()
	dst := openPostgres(t, pgtest.NewDatabase(t))
	defer dst.Close()
	rows, err := dst.DB().QueryContext(t.Context(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	must(t, err)
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		must(t, rows.Scan(&name))
		// Not hub state a SQLite hub has: the schema's own record, and what only replicas
		// sharing PostgreSQL use.
		switch name {
		case "schema_migrations", "leases", "artifacts", "shared_files":
			continue
		}
		tables = append(tables, name)
	}
	must(t, rows.Err())
	copied := slices.Sorted(maps.Keys(storecopy.Tables()))
	if diff := cmp.Diff(tables, copied); diff != "" {
		t.Errorf("tables of hub state (-in the schema +copied by storecopy.ToPostgres):\n%s", diff)
	}
}
