package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flotilla/flotilla/internal/hub/store"
)

func (o opener) testDesiredState(t *testing.T) {
	t.Run("generation rises only on a changed document", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		for i, step := range []struct {
			doc         []byte
			wantGen     int64
			wantChanged bool
		}{
			{[]byte(`{"a":1}`), 1, true},
			{[]byte(`{"a":1}`), 1, false},
			{[]byte(`{"a":2}`), 2, true},
			{[]byte(`{"a":2}`), 2, false},
			{[]byte(`{"a":1}`), 3, true},     // back to an earlier document is still a change
			{[]byte(`{"a":1} `), 4, true},    // byte for byte, not semantically
			{[]byte{}, 5, true},              // empty
			{nil, 5, false},                  // nil has the same (no) bytes as empty
			{[]byte{0, 0xff, '\n'}, 6, true}, // any bytes, not only text
		} {
			gen, changed, err := s.PutDesiredState(ctx, "edge-1", step.doc)
			must(t, err)
			if gen != step.wantGen || changed != step.wantChanged {
				t.Fatalf("step %d: PutDesiredState(%q) = (%d, %v), want (%d, %v)", i, step.doc, gen, changed, step.wantGen, step.wantChanged)
			}
			got, err := s.GetDesiredState(ctx, "edge-1")
			must(t, err)
			want := store.DesiredState{Cluster: "edge-1", Generation: step.wantGen, Document: step.doc}
			if diff := cmp.Diff(want, got, opts, cmpopts.IgnoreFields(store.DesiredState{}, "UpdatedAt")); diff != "" {
				t.Fatalf("step %d: GetDesiredState (-want +got):\n%s", i, diff)
			}
			wantRecent(t, "UpdatedAt", got.UpdatedAt)
		}
	})

	t.Run("generations are per cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		addCluster(t, ctx, s, "edge-2")
		for _, doc := range []string{"a", "b", "c"} {
			_, _, err := s.PutDesiredState(ctx, "edge-1", []byte(doc))
			must(t, err)
		}
		gen, changed, err := s.PutDesiredState(ctx, "edge-2", []byte("c"))
		must(t, err)
		if gen != 1 || !changed {
			t.Errorf("first document of edge-2: (%d, %v), want (1, true)", gen, changed)
		}
	})

	t.Run("lists every stored desired state by cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		got, err := s.ListDesiredStates(ctx)
		must(t, err)
		if len(got) != 0 {
			t.Errorf("ListDesiredStates of an empty store = %v", got)
		}
		for _, name := range []string{"edge-2", "edge-1", "edge-3"} {
			addCluster(t, ctx, s, name)
		}
		for _, put := range []struct{ cluster, doc string }{{"edge-2", "b1"}, {"edge-1", "a1"}, {"edge-2", "b2"}} {
			_, _, err := s.PutDesiredState(ctx, put.cluster, []byte(put.doc))
			must(t, err)
		}
		got, err = s.ListDesiredStates(ctx)
		must(t, err)
		// edge-3 has none yet; each entry is what GetDesiredState returns.
		var want []store.DesiredState
		for _, c := range []string{"edge-1", "edge-2"} {
			d, err := s.GetDesiredState(ctx, c)
			must(t, err)
			want = append(want, d)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ListDesiredStates (-want +got):\n%s", diff)
		}
		if len(got) == 2 && (got[1].Generation != 2 || string(got[1].Document) != "b2") {
			t.Errorf("edge-2 listed as %+v, want generation 2 with b2", got[1])
		}

		// By cluster in byte order, as ListClusters, whatever the database's collation.
		for _, name := range []string{"Edge-9", "edge_0"} {
			addCluster(t, ctx, s, name)
			_, _, err := s.PutDesiredState(ctx, name, []byte("x"))
			must(t, err)
		}
		got, err = s.ListDesiredStates(ctx)
		must(t, err)
		var order []string
		for _, d := range got {
			order = append(order, d.Cluster)
		}
		if diff := cmp.Diff([]string{"Edge-9", "edge-1", "edge-2", "edge_0"}, order); diff != "" {
			t.Errorf("ListDesiredStates order (-want +got):\n%s", diff)
		}
	})

	t.Run("unknown cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		if _, err := s.GetDesiredState(ctx, "edge-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetDesiredState before any Put: err = %v, want ErrNotFound", err)
		}
		if _, _, err := s.PutDesiredState(ctx, "nope", []byte("x")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PutDesiredState for an unregistered cluster: err = %v, want ErrNotFound", err)
		}
		if _, err := s.GetDesiredState(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetDesiredState of an unregistered cluster: err = %v, want ErrNotFound", err)
		}
	})
}

// status is a fully populated status of release for cluster, reported at reportedAt.
func status(cluster, release string, reportedAt time.Time) store.AssignmentStatus {
	return store.AssignmentStatus{
		Cluster:            cluster,
		Release:            release,
		ObservedGeneration: 7,
		Revision:           "main@sha1:0123abcd",
		Digest:             "sha256:feed",
		Phase:              "Ready",
		Health:             "Current",
		Objects:            12,
		Drifted:            true,
		Conflicts:          2,
		Error:              "ConfigMap/apps/web: field manager conflict",
		Detail:             []byte(`{"release":"` + release + `"}`),
		ReportedAt:         reportedAt,
	}
}

// ignoreUpdatedAt leaves out the time the store stamps itself; tests check it with wantRecent.
var ignoreUpdatedAt = cmpopts.IgnoreFields(store.AssignmentStatus{}, "UpdatedAt")

func (o opener) testReports(t *testing.T) {
	t.Run("round-trips statuses", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		want := []store.AssignmentStatus{status("edge-1", "api", at(0)), status("edge-1", "web", at(0))}
		want[1].Detail = nil
		want[1].Drifted = false
		want[1].Error = ""
		dup, err := s.IngestReport(ctx, "edge-1", 1, want)
		must(t, err)
		if dup {
			t.Error("first report: duplicate = true")
		}
		got, err := s.ListStatuses(ctx)
		must(t, err)
		if diff := cmp.Diff(want, got, opts, ignoreUpdatedAt); diff != "" {
			t.Errorf("ListStatuses (-want +got):\n%s", diff)
		}
		for _, st := range got {
			wantRecent(t, st.Release+": UpdatedAt", st.UpdatedAt)
			wantUTC(t, st.Release+": ReportedAt", st.ReportedAt)
		}
	})

	t.Run("the clusters reporting a release", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		for _, c := range []string{"edge-2", "edge-1", "Edge-3"} {
			addCluster(t, ctx, s, c)
			_, err := s.IngestReport(ctx, c, 1, []store.AssignmentStatus{status(c, "web", at(0)), status(c, c+"-only", at(0))})
			must(t, err)
		}
		got, err := s.ClustersReporting(ctx, "web")
		must(t, err)
		if want := []string{"Edge-3", "edge-1", "edge-2"}; !slices.Equal(got, want) {
			t.Errorf("ClustersReporting(web) = %v, want %v", got, want)
		}
		if got, err := s.ClustersReporting(ctx, "nope"); err != nil || len(got) != 0 {
			t.Errorf("ClustersReporting(nope) = %v, %v; want none", got, err)
		}
	})

	t.Run("statuses belong to the reporting cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		_, err := s.IngestReport(ctx, "edge-1", 1, []store.AssignmentStatus{status("", "web", at(0))})
		must(t, err)
		got, err := s.ListStatuses(ctx)
		must(t, err)
		if len(got) != 1 || got[0].Cluster != "edge-1" {
			t.Errorf("ListStatuses = %+v, want one status of edge-1", got)
		}
	})

	t.Run("a duplicate seq is a no-op counted once", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		first := []store.AssignmentStatus{status("edge-1", "web", at(0))}
		later := status("edge-1", "web", at(time.Minute))
		later.Phase = "Failed"
		for i, step := range []struct {
			seq       uint64
			statuses  []store.AssignmentStatus
			wantDup   bool
			wantCount int64
			wantPhase string
		}{
			{1, first, false, 1, "Ready"},
			{1, first, true, 1, "Ready"},
			{1, []store.AssignmentStatus{later}, true, 1, "Ready"}, // same seq, other content: still ignored
			{2, nil, false, 2, "Ready"},                            // an empty report counts
			{3, []store.AssignmentStatus{later}, false, 3, "Failed"},
			{2, first, true, 3, "Failed"},
		} {
			dup, err := s.IngestReport(ctx, "edge-1", step.seq, step.statuses)
			must(t, err)
			if dup != step.wantDup {
				t.Errorf("step %d: IngestReport(seq %d) duplicate = %v, want %v", i, step.seq, dup, step.wantDup)
			}
			n, err := s.ReportsIngested(ctx, "edge-1")
			must(t, err)
			if n != step.wantCount {
				t.Errorf("step %d: ReportsIngested = %d, want %d", i, n, step.wantCount)
			}
			got, err := s.ListStatuses(ctx)
			must(t, err)
			if len(got) != 1 || got[0].Phase != step.wantPhase {
				t.Errorf("step %d: statuses = %+v, want one with phase %s", i, got, step.wantPhase)
			}
		}
	})

	t.Run("seq is per cluster and spans uint64", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		addCluster(t, ctx, s, "edge-2")
		for _, r := range []struct {
			cluster string
			seq     uint64
		}{
			{"edge-1", 0}, {"edge-1", 1}, {"edge-1", math.MaxInt64}, {"edge-1", math.MaxInt64 + 1}, {"edge-1", math.MaxUint64},
			{"edge-2", 1},
		} {
			dup, err := s.IngestReport(ctx, r.cluster, r.seq, nil)
			must(t, err)
			if dup {
				t.Errorf("IngestReport(%s, %d): duplicate on first ingestion", r.cluster, r.seq)
			}
		}
		dup, err := s.IngestReport(ctx, "edge-1", math.MaxUint64, nil)
		must(t, err)
		if !dup {
			t.Error("IngestReport(edge-1, MaxUint64) again: not a duplicate")
		}
		for cluster, want := range map[string]int64{"edge-1": 5, "edge-2": 1, "nope": 0} {
			n, err := s.ReportsIngested(ctx, cluster)
			must(t, err)
			if n != want {
				t.Errorf("ReportsIngested(%s) = %d, want %d", cluster, n, want)
			}
		}
	})

	t.Run("an older ReportedAt does not overwrite a newer one", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name      string
			second    time.Duration // ReportedAt of the second report, relative to the first
			wantPhase string
		}{
			{"older is ignored", -time.Second, "Ready"},
			{"equal replaces", 0, "Failed"},
			{"newer replaces", time.Second, "Failed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, s := t.Context(), o.new(t)
				addCluster(t, ctx, s, "edge-1")
				_, err := s.IngestReport(ctx, "edge-1", 1, []store.AssignmentStatus{status("edge-1", "web", at(time.Hour))})
				must(t, err)
				second := status("edge-1", "web", at(time.Hour+tc.second))
				second.Phase = "Failed"
				other := status("edge-1", "api", at(0)) // a release not stored yet always lands
				dup, err := s.IngestReport(ctx, "edge-1", 2, []store.AssignmentStatus{second, other})
				must(t, err)
				if dup {
					t.Fatal("second report: duplicate = true")
				}
				got, err := s.ListStatuses(ctx)
				must(t, err)
				var phases []string
				for _, st := range got {
					phases = append(phases, st.Release+"="+st.Phase)
				}
				if diff := cmp.Diff([]string{"api=Ready", "web=" + tc.wantPhase}, phases); diff != "" {
					t.Errorf("statuses (-want +got):\n%s", diff)
				}
				if n, err := s.ReportsIngested(ctx, "edge-1"); err != nil || n != 2 {
					t.Errorf("ReportsIngested = %d, %v; want 2: a report whose statuses were older still counts", n, err)
				}
			})
		}
	})

	t.Run("lists statuses by release then cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		reports := map[string][]string{
			"edge-2": {"web", "api", "db"},
			"edge-1": {"web", "db"},
			"edge-3": {"api"},
		}
		for cluster, releases := range reports {
			addCluster(t, ctx, s, cluster)
			var statuses []store.AssignmentStatus
			for _, r := range releases {
				statuses = append(statuses, status(cluster, r, at(0)))
			}
			_, err := s.IngestReport(ctx, cluster, 1, statuses)
			must(t, err)
		}
		got, err := s.ListStatuses(ctx)
		must(t, err)
		var keys []string
		for _, st := range got {
			keys = append(keys, st.Release+"/"+st.Cluster)
		}
		want := []string{"api/edge-2", "api/edge-3", "db/edge-1", "db/edge-2", "web/edge-1", "web/edge-2"}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("ListStatuses order (-want +got):\n%s", diff)
		}
	})

	t.Run("a report for an unknown cluster is not found", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		_, err := s.IngestReport(ctx, "nope", 1, []store.AssignmentStatus{status("nope", "web", at(0))})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("IngestReport: err = %v, want ErrNotFound", err)
		}
		got, err := s.ListStatuses(ctx)
		must(t, err)
		if len(got) != 0 {
			t.Errorf("ListStatuses = %+v, want none", got)
		}
	})

	t.Run("a release named twice in one report keeps what applying them in order leaves", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name      string
			phases    []string
			times     []time.Duration
			wantPhase string
		}{
			{"later time wins", []string{"A", "B"}, []time.Duration{time.Second, 0}, "A"},
			{"equal times: the last wins", []string{"A", "B", "C"}, []time.Duration{time.Second, 0, time.Second}, "C"},
			{"in order", []string{"A", "B"}, []time.Duration{0, time.Second}, "B"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, s := t.Context(), o.new(t)
				addCluster(t, ctx, s, "edge-1")
				var sts []store.AssignmentStatus
				for i, p := range tc.phases {
					st := status("edge-1", "web", at(tc.times[i]))
					st.Phase = p
					sts = append(sts, st)
				}
				_, err := s.IngestReport(ctx, "edge-1", 1, sts)
				must(t, err)
				got, err := s.ListStatuses(ctx)
				must(t, err)
				if len(got) != 1 || got[0].Phase != tc.wantPhase {
					t.Errorf("statuses = %+v, want one with phase %s", got, tc.wantPhase)
				}
			})
		}
	})

	t.Run("concurrent duplicates are ingested once", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		const n = 10
		dups := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				dups[i], errs[i] = s.IngestReport(ctx, "edge-1", 42, []store.AssignmentStatus{status("edge-1", "web", at(0))})
			})
		}
		wg.Wait()
		fresh := 0
		for i := range n {
			must(t, errs[i])
			if !dups[i] {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d of %d concurrent ingestions of one report were not duplicates, want 1", fresh, n)
		}
		if got, err := s.ReportsIngested(ctx, "edge-1"); err != nil || got != 1 {
			t.Errorf("ReportsIngested = %d, %v; want 1", got, err)
		}
	})
}

func (o opener) testRemoveCluster(t *testing.T) {
	ctx, s := t.Context(), o.new(t)
	// Two clusters with everything a cluster can have; edge-1 is removed, edge-2 must not
	// notice.
	for i, c := range []string{"edge-1", "edge-2"} {
		addCluster(t, ctx, s, c)
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "used-" + c, SecretHash: hash(c), Cluster: c, ExpiresAt: at(time.Hour)}))
		must(t, s.ConsumeJoinToken(ctx, "used-"+c, hash(c), c, at(0)))
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "spare-" + c, SecretHash: hash(c), Cluster: c, ExpiresAt: at(time.Hour)}))
		must(t, s.AddCertificate(ctx, store.Certificate{Serial: fmt.Sprintf("%02x01", i), Cluster: c, NotAfter: at(time.Hour)}))
		must(t, s.AddCertificate(ctx, store.Certificate{Serial: fmt.Sprintf("%02x02", i), Cluster: c, NotAfter: at(time.Hour)}))
		for _, doc := range []string{"one", "two"} {
			_, _, err := s.PutDesiredState(ctx, c, []byte(doc))
			must(t, err)
		}
		for seq := range uint64(3) {
			_, err := s.IngestReport(ctx, c, seq, []store.AssignmentStatus{status(c, "web", at(0)), status(c, "api", at(0))})
			must(t, err)
		}
	}

	must(t, s.RemoveCluster(ctx, "edge-1"))

	if _, err := s.GetCluster(ctx, "edge-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetCluster after removal: err = %v, want ErrNotFound", err)
	}
	if err := s.RemoveCluster(ctx, "edge-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RemoveCluster twice: err = %v, want ErrNotFound", err)
	}
	for _, serial := range []string{"0001", "0002"} {
		if valid, err := s.CertificateValid(ctx, serial, "edge-1"); err != nil || valid {
			t.Errorf("CertificateValid(%s) after removal = %v, %v; want false (revoked)", serial, valid, err)
		}
	}
	if err := s.ConsumeJoinToken(ctx, "spare-edge-1", hash("edge-1"), "edge-1", at(0)); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("ConsumeJoinToken of a removed cluster's token: err = %v, want ErrTokenInvalid", err)
	}
	if _, err := s.GetDesiredState(ctx, "edge-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDesiredState after removal: err = %v, want ErrNotFound", err)
	}
	if n, err := s.ReportsIngested(ctx, "edge-1"); err != nil || n != 0 {
		t.Errorf("ReportsIngested after removal = %d, %v; want 0", n, err)
	}
	if _, err := s.IngestReport(ctx, "edge-1", 9, []store.AssignmentStatus{status("edge-1", "web", at(0))}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("IngestReport after removal: err = %v, want ErrNotFound", err)
	}

	// edge-2 is untouched.
	wantOthers(t, ctx, s)

	t.Run("a cluster re-added under the same name starts afresh", func(t *testing.T) {
		addCluster(t, ctx, s, "edge-1")
		gen, changed, err := s.PutDesiredState(ctx, "edge-1", []byte("two"))
		must(t, err)
		if gen != 1 || !changed {
			t.Errorf("first PutDesiredState after re-adding = (%d, %v), want (1, true)", gen, changed)
		}
		dup, err := s.IngestReport(ctx, "edge-1", 0, nil)
		must(t, err)
		if dup {
			t.Error("IngestReport(seq 0) after re-adding: duplicate of a report of the removed cluster")
		}
		for _, serial := range []string{"0001", "0002"} {
			if valid, err := s.CertificateValid(ctx, serial, "edge-1"); err != nil || valid {
				t.Errorf("CertificateValid(%s) after re-adding = %v, %v; want false: revocation is permanent", serial, valid, err)
			}
		}
	})
}

// wantOthers checks that edge-2, set up by testRemoveCluster, kept everything.
func wantOthers(t *testing.T, ctx context.Context, s store.Store) {
	t.Helper()
	if _, err := s.GetCluster(ctx, "edge-2"); err != nil {
		t.Errorf("GetCluster(edge-2): %v", err)
	}
	for _, serial := range []string{"0101", "0102"} {
		if valid, err := s.CertificateValid(ctx, serial, "edge-2"); err != nil || !valid {
			t.Errorf("CertificateValid(%s, edge-2) = %v, %v; want true", serial, valid, err)
		}
	}
	if d, err := s.GetDesiredState(ctx, "edge-2"); err != nil || d.Generation != 2 {
		t.Errorf("GetDesiredState(edge-2) = %+v, %v; want generation 2", d, err)
	}
	if n, err := s.ReportsIngested(ctx, "edge-2"); err != nil || n != 3 {
		t.Errorf("ReportsIngested(edge-2) = %d, %v; want 3", n, err)
	}
	got, err := s.ListStatuses(ctx)
	must(t, err)
	var keys []string
	for _, st := range got {
		keys = append(keys, st.Release+"/"+st.Cluster)
	}
	if diff := cmp.Diff([]string{"api/edge-2", "web/edge-2"}, keys); diff != "" {
		t.Errorf("statuses after removing edge-1 (-want +got):\n%s", diff)
	}
	must(t, s.ConsumeJoinToken(ctx, "spare-edge-2", hash("edge-2"), "edge-2", at(0)))
}

func (o opener) testReportStats(t *testing.T) {
	ctx, s := t.Context(), o.new(t)
	addCluster(t, ctx, s, "edge-1")
	st, err := s.ReportStats(ctx, "edge-1")
	if err != nil || st != (store.ReportStats{}) {
		t.Fatalf("stats of a silent cluster = %+v, %v; want zero", st, err)
	}
	for _, seq := range []uint64{3, 1, 7} {
		if _, err := s.IngestReport(ctx, "edge-1", seq, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The same compaction told twice (a resent report) counts once.
	for range 2 {
		if err := s.RecordCompacted(ctx, "edge-1", 7, 5); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordCompacted(ctx, "edge-1", 9, 2); err != nil {
		t.Fatal(err)
	}
	st, err = s.ReportStats(ctx, "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.ReportStats{Ingested: 3, LastSeq: 7, Compacted: 7}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if err := s.RecordCompacted(ctx, "nope", 1, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("compaction of an unknown cluster: err = %v, want ErrNotFound", err)
	}
	if err := s.RemoveCluster(ctx, "edge-1"); err != nil {
		t.Fatalf("remove a cluster with compactions: %v", err)
	}
}
