package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// batchStore is a store that writes desired states in batches (SQLite and Postgres do).
type batchStore interface {
	store.Store
	PutDesiredStates(ctx context.Context, writes []store.DesiredWrite) []store.DesiredWritten
}

func eachBatchStore(t *testing.T, fn func(t *testing.T, s batchStore)) {
	t.Run("store=sqlite", func(t *testing.T) {
		s := openSQLite(t, filepath.Join(t.TempDir(), "hub.db"))
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("store=postgres", func(t *testing.T) {
		s := openPostgres(t, pgtest.NewDatabase(t))
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

// addClusters registers edge-0000 ... edge-(n-1).
func addClusters(t *testing.T, s store.Store, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("edge-%04d", i)
		must(t, s.AddCluster(t.Context(), store.Cluster{Name: names[i], CreatedAt: time.Now()}))
	}
	return names
}

// PutDesiredStates gives each cluster what PutDesiredState would have: generation 1 for a
// first document, the same generation for the same document, one more for another; an
// unregistered cluster and a cluster named twice are refused without holding up the others;
// more clusters than one transaction takes are all written.
func TestPutDesiredStates(t *testing.T) {
	t.Parallel()
	eachBatchStore(t, func(t *testing.T, s batchStore) {
		ctx := t.Context()
		names := addClusters(t, s, store.DesiredBatchSize+7)
		doc := func(name, rev string) []byte { return []byte(`{"cluster":"` + name + `","rev":"` + rev + `"}`) }

		first := make([]store.DesiredWrite, len(names))
		for i, n := range names {
			first[i] = store.DesiredWrite{Cluster: n, Document: doc(n, "1")}
		}
		for i, r := range s.PutDesiredStates(ctx, first) {
			if r.Err != nil || r.Generation != 1 || !r.Changed {
				t.Fatalf("first write of %s: generation %d, changed %v, error %v; want 1, true, nil", names[i], r.Generation, r.Changed, r.Err)
			}
		}

		second := []store.DesiredWrite{
			{Cluster: names[0], Document: doc(names[0], "1")}, // unchanged
			{Cluster: names[1], Document: doc(names[1], "2")}, // changed
			{Cluster: "gone", Document: doc("gone", "2")},     // not registered
			{Cluster: names[1], Document: doc(names[1], "3")}, // twice
			{Cluster: names[len(names)-1], Document: nil},     // an empty document is a change too
		}
		got := s.PutDesiredStates(ctx, second)
		for i, tc := range []struct {
			gen     int64
			changed bool
			err     string
			notFnd  bool
		}{
			{gen: 1},
			{gen: 2, changed: true},
			{err: `desired state of cluster "gone": cluster not registered`, notFnd: true},
			{err: `desired state of cluster "` + names[1] + `": written twice in one batch`},
			{gen: 2, changed: true},
		} {
			r := got[i]
			if r.Generation != tc.gen || r.Changed != tc.changed {
				t.Errorf("write %d (%s): generation %d, changed %v; want %d, %v", i, second[i].Cluster, r.Generation, r.Changed, tc.gen, tc.changed)
			}
			switch {
			case tc.err == "" && r.Err != nil:
				t.Errorf("write %d (%s): %v", i, second[i].Cluster, r.Err)
			case tc.err != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.err)):
				t.Errorf("write %d (%s): error %v, want one saying %q", i, second[i].Cluster, r.Err, tc.err)
			case tc.notFnd && !errors.Is(r.Err, store.ErrNotFound):
				t.Errorf("write %d (%s): error %v is not ErrNotFound", i, second[i].Cluster, r.Err)
			}
		}

		want := map[string]struct {
			gen int64
			doc string
		}{names[0]: {1, string(doc(names[0], "1"))}, names[1]: {2, string(doc(names[1], "2"))},
			names[2]: {1, string(doc(names[2], "1"))}, names[len(names)-1]: {2, ""}}
		for name, w := range want {
			ds, err := s.GetDesiredState(ctx, name)
			must(t, err)
			if ds.Generation != w.gen || string(ds.Document) != w.doc {
				t.Errorf("%s stored: generation %d, document %q; want %d, %q", name, ds.Generation, ds.Document, w.gen, w.doc)
			}
		}
		if _, err := s.GetDesiredState(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a desired state was stored for an unregistered cluster: %v", err)
		}
		all, err := s.ListDesiredStates(ctx)
		must(t, err)
		if len(all) != len(names) {
			t.Errorf("%d desired states stored, want %d", len(all), len(names))
		}
	})
}

// Two replicas writing the same new documents to the same clusters at once, in opposite
// orders: each cluster's generation rises once, exactly one of the two reports the change,
// and neither deadlocks on the other's row locks.
func TestPutDesiredStatesConcurrentReplicas(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	ctx := t.Context()
	names := addClusters(t, a, 2*store.DesiredBatchSize)
	writes := func(rev string, reverse bool) []store.DesiredWrite {
		out := make([]store.DesiredWrite, len(names))
		for i, n := range names {
			j := i
			if reverse {
				j = len(names) - 1 - i
			}
			out[j] = store.DesiredWrite{Cluster: n, Document: []byte(rev)}
		}
		return out
	}
	for _, r := range a.PutDesiredStates(ctx, writes("1", false)) {
		must(t, r.Err)
	}
	var results [2][]store.DesiredWritten
	var wg sync.WaitGroup
	for i, s := range []*store.Postgres{a, b} {
		wg.Go(func() {
			for range 3 { // the same document again changes nothing
				results[i] = append(results[i], s.PutDesiredStates(ctx, writes("2", i == 1))...)
			}
		})
	}
	wg.Wait()
	changed := map[string]int{}
	for i, rs := range results {
		for j, r := range rs {
			name := writes("2", i == 1)[j%len(names)].Cluster
			if r.Err != nil {
				t.Fatalf("replica %d, %s: %v", i, name, r.Err)
			}
			if r.Generation != 2 {
				t.Errorf("replica %d, %s: generation %d, want 2", i, name, r.Generation)
			}
			if r.Changed {
				changed[name]++
			}
		}
	}
	for _, n := range names {
		if changed[n] != 1 {
			t.Errorf("%s: reported changed %d times, want once", n, changed[n])
		}
	}
}
