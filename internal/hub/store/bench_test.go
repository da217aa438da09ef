package store_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// BenchmarkIngestReport ingests reports of 20 statuses each, round-robin from 100 clusters,
// every report a new seq with newer statuses: the hub's steady state. It runs on both stores;
// compare the two in one run. The PostgreSQL test server (make postgres) runs with fsync off,
// so its figure leaves out the cost of durable commits that SQLite's includes.
func BenchmarkIngestReport(b *testing.B) {
	b.Run("store=sqlite", func(b *testing.B) {
		benchmarkIngestReport(b, openSQLite(b, filepath.Join(b.TempDir(), "hub.db")))
	})
	b.Run("store=postgres", func(b *testing.B) {
		benchmarkIngestReport(b, openPostgres(b, pgtest.NewDatabase(b)))
	})
}

func benchmarkIngestReport(b *testing.B, s store.Store) {
	const (
		clusters = 100
		releases = 20
	)
	ctx := b.Context()
	defer s.Close()

	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("edge-%03d", i)
		must(b, s.AddCluster(ctx, store.Cluster{Name: names[i], CreatedAt: time.Now()}))
	}
	statuses := make([]store.AssignmentStatus, releases)
	for i := range statuses {
		statuses[i] = store.AssignmentStatus{
			Release:            fmt.Sprintf("release-%02d", i),
			ObservedGeneration: 3,
			Revision:           "main@sha1:0123456789abcdef0123456789abcdef01234567",
			Digest:             "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Phase:              "Ready",
			Health:             "Current",
			Objects:            14,
			Detail:             []byte(`{"release":"web","phase":"Ready","objects":14,"health":"Current"}`),
		}
	}

	b.ReportAllocs()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		for j := range statuses {
			statuses[j].ReportedAt = start.Add(time.Duration(i))
		}
		dup, err := s.IngestReport(ctx, names[i%clusters], uint64(i/clusters), statuses)
		if err != nil || dup {
			b.Fatalf("IngestReport: duplicate %v, err %v", dup, err)
		}
	}
}
