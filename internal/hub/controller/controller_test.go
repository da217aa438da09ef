package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// fakeStore keeps desired states in memory and fails the operations named in fail, once per
// count.
type fakeStore struct {
	mu       sync.Mutex
	clusters []store.Cluster
	docs     map[string]store.DesiredState
	fail     map[string]int
	puts     int
	records  map[string]store.Record
	statuses []store.AssignmentStatus
}

var errInjected = errors.New("injected: database is locked (SQLITE_BUSY)")

func (s *fakeStore) failing(op string) error {
	if s.fail[op] > 0 {
		s.fail[op]--
		return fmt.Errorf("%s: %w", op, errInjected)
	}
	return nil
}

func (s *fakeStore) ListClusters(context.Context) ([]store.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failing("ListClusters"); err != nil {
		return nil, err
	}
	return slices.Clone(s.clusters), nil
}

func (s *fakeStore) GetDesiredState(_ context.Context, cluster string) (store.DesiredState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failing("GetDesiredState"); err != nil {
		return store.DesiredState{}, err
	}
	ds, ok := s.docs[cluster]
	if !ok {
		return store.DesiredState{}, store.ErrNotFound
	}
	return ds, nil
}

func (s *fakeStore) ListDesiredStates(context.Context) ([]store.DesiredState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failing("ListDesiredStates"); err != nil {
		return nil, err
	}
	var out []store.DesiredState
	for _, ds := range s.docs {
		out = append(out, ds)
	}
	return out, nil
}

func (s *fakeStore) PutDesiredState(_ context.Context, cluster string, doc []byte) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failing("PutDesiredState"); err != nil {
		return 0, false, err
	}
	s.puts++
	ds := s.docs[cluster]
	if bytes.Equal(ds.Document, doc) {
		return ds.Generation, false, nil
	}
	s.docs[cluster] = store.DesiredState{Cluster: cluster, Generation: ds.Generation + 1, Document: bytes.Clone(doc)}
	return ds.Generation + 1, true, nil
}

func (s *fakeStore) PutSourceStatus(context.Context, store.SourceStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failing("PutSourceStatus")
}

func (s *fakeStore) PutFleetStatus(context.Context, store.FleetStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failing("PutFleetStatus")
}

func (s *fakeStore) doc(t *testing.T, cluster string) (desired.Document, int64) {
	t.Helper()
	s.mu.Lock()
	ds, ok := s.docs[cluster]
	s.mu.Unlock()
	if !ok {
		t.Fatalf("no desired state stored for %s", cluster)
	}
	doc, err := desired.DecodeDocument(ds.Document)
	if err != nil {
		t.Fatal(err)
	}
	return doc, ds.Generation
}

// downPoller is a Git server that cannot be reached: right after a start, no source has an
// artifact.
type downPoller struct{}

func (downPoller) Resolve(_ context.Context, g source.Git) (source.Resolved, error) {
	return source.Resolved{}, fmt.Errorf("source '%s': dial tcp: connection refused", g.Name)
}
func (downPoller) Checkout(context.Context, source.Git, string, string) error {
	return errors.New("unreachable")
}

type heldLease struct{}

func (heldLease) Held() bool               { return true }
func (heldLease) Changed() <-chan struct{} { return nil }

const fleetYAML = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: https://git.example.com/platform.git, branch: main}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: baseline}
spec:
  source: platform
  path: baseline
  targets: [{selector: {matchLabels: {env: production}}}]
`

// previousDoc is what an earlier hub process stored for c1: baseline at revision 1.
var previousAssignment = desired.Assignment{
	Release: "baseline", Source: "platform", URL: "https://git.example.com/platform.git", Revision: "main@sha1:1111",
	Digest: "sha256:" + fmt.Sprintf("%064d", 1), Path: "baseline", SelfHeal: true, Timeout: 5 * time.Minute,
	Interval: 10 * time.Minute, Vars: map[string]string{"cluster_name": "c1", "cluster_label_env": "production"},
}

func newTestController(t *testing.T, st *fakeStore, clk clock.Clock) *Controller {
	t.Helper()
	fleetDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleetYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Deps{Store: st, Poller: downPoller{}, Artifacts: arts, Lease: heldLease{}, Clock: clk},
		Options{Fleet: fleetDir, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restartedHub is a store as a hub restart finds it: c1 was scheduled baseline by the previous
// process, c2 was registered since and has nothing stored.
func restartedHub(t *testing.T) *fakeStore {
	t.Helper()
	doc, err := desired.Encode(desired.Document{Assignments: []desired.Assignment{previousAssignment}})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeStore{
		clusters: []store.Cluster{{Name: "c1", Labels: map[string]string{"env": "production"}}, {Name: "c2", Labels: map[string]string{"env": "production"}}},
		docs:     map[string]store.DesiredState{"c1": {Cluster: "c1", Generation: 4, Document: doc}},
		fail:     map[string]int{},
	}
}

// Right after a start the sources have no artifact yet, so a reschedule can only keep what a
// cluster had; each store read or write that fails once must leave every desired state as it
// was, and the next reschedule must still keep baseline on c1.
func TestStoreFailureKeepsEveryDesiredState(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"ListDesiredStates", "ListClusters", "GetDesiredState", "PutDesiredState", "PutFleetStatus"} {
		t.Run("fails "+op+" once", func(t *testing.T) {
			t.Parallel()
			st := restartedHub(t)
			clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			c := newTestController(t, st, clk)
			st.fail[op] = 1

			c.loadFleet(t.Context())
			c.pollSources(t.Context())
			c.reschedule(t.Context())
			assertKeepsBaseline(t, st, "after the failing reschedule")

			clk.Advance(retryAfterFailure)
			c.reschedule(t.Context())
			assertKeepsBaseline(t, st, "after the next reschedule")
			if _, gen := st.doc(t, "c2"); gen != 1 {
				t.Errorf("c2: generation %d, want 1 (its empty document stored once)", gen)
			}
			if st.failsLeft(op) != 0 {
				t.Errorf("%s was never called", op)
			}
		})
	}
}

func assertKeepsBaseline(t *testing.T, st *fakeStore, when string) {
	t.Helper()
	doc, gen := st.doc(t, "c1")
	if diff := cmp.Diff([]desired.Assignment{previousAssignment}, doc.Assignments); diff != "" {
		t.Errorf("%s: c1's assignments changed (-want +got):\n%s", when, diff)
	}
	if len(doc.Removed) != 0 {
		t.Errorf("%s: c1 got tombstones %v", when, doc.Removed)
	}
	if gen != 4 && gen != 5 { // 5: the same assignment re-encoded in the new document format
		t.Errorf("%s: c1 generation %d", when, gen)
	}
}

// A failed reschedule is retried on the controller's clock, not at the next fleet change.
func TestFailedRescheduleIsRetried(t *testing.T) {
	t.Parallel()
	st := restartedHub(t)
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	c := newTestController(t, st, clk)
	st.fail["ListClusters"] = 1

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	eventually.Within(t, 10*time.Second, func() error {
		if n, w := st.failsLeft("ListClusters"), clk.Waiters(); n != 0 || w == 0 {
			return fmt.Errorf("the failed reschedule: %d ListClusters failures left and %d timers waiting, want 0 and some", n, w)
		}
		return nil
	})
	if st.putCount() != 0 {
		t.Fatalf("%d desired states stored after the failed reschedule, want 0", st.putCount())
	}
	// The loop ticks every 500ms of its clock; the retry is due retryAfterFailure (2s) after
	// the failure: on the fourth tick, not before, and not only at the next fleet change.
	ticks := 0
	for ; ticks < 8 && st.putCount() == 0; ticks++ {
		clk.Advance(500 * time.Millisecond)
		eventually.Within(t, 10*time.Second, waiting(clk, "the loop to wait again"))
	}
	if want := int(retryAfterFailure / (500 * time.Millisecond)); ticks != want {
		t.Fatalf("the failed reschedule was retried after %d ticks of 500ms (%d stores), want %d", ticks, st.putCount(), want)
	}
	assertKeepsBaseline(t, st, "after the retry")
}

func (s *fakeStore) failsLeft(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail[op]
}

func (s *fakeStore) putCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
}

// waiting is the condition that some goroutine waits on clk: what names the wait.
func waiting(clk *clock.Fake, what string) func() error {
	return func() error {
		if clk.Waiters() == 0 {
			return fmt.Errorf("%s: no timer waits on the clock", what)
		}
		return nil
	}
}

// triggered is the condition that c has one wake-up pending: what names it.
func triggered(c *Controller, what string) func() error {
	return func() error {
		if n := len(c.trigger); n != 1 {
			return fmt.Errorf("%s: %d wake-ups pending, want 1", what, n)
		}
		return nil
	}
}

// A stored document that does not decode leaves its cluster alone; the others are scheduled.
func TestUndecodableDocumentLeavesItsClusterAlone(t *testing.T) {
	t.Parallel()
	st := restartedHub(t)
	st.docs["c2"] = store.DesiredState{Cluster: "c2", Generation: 9, Document: []byte(`{"garbage":`)}
	c := newTestController(t, st, clock.NewFake(time.Unix(0, 0)))
	c.loadFleet(t.Context())
	c.reschedule(t.Context())
	if got := st.docs["c2"]; got.Generation != 9 || string(got.Document) != `{"garbage":` {
		t.Errorf("c2's undecodable document was replaced: generation %d, %s", got.Generation, got.Document)
	}
	assertKeepsBaseline(t, st, "with c2 undecodable")
}

// An artifact packed while a reschedule runs was not in the keep set that reschedule took at
// its start; garbage collection must still leave it, or agents assigned it get 404 until the
// next poll packs it again.
func TestCollectKeepsArtifactsPackedDuringReschedule(t *testing.T) {
	t.Parallel()
	c := newTestController(t, restartedHub(t), clock.NewFake(time.Unix(0, 0)))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	arts := c.d.Artifacts
	digest, _, err := arts.PutDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.fresh[digest] = true // the poll packed it; its result is not applied yet
	c.mu.Unlock()
	c.collect(t.Context(), map[string]bool{}) // keep as taken before the pack
	if !arts.Has(digest) {
		t.Fatal("an artifact packed during the reschedule was garbage-collected")
	}
	c.mu.Lock()
	delete(c.fresh, digest) // applied and then replaced: nothing refers to it any more
	c.mu.Unlock()
	c.collect(t.Context(), map[string]bool{})
	if arts.Has(digest) {
		t.Fatal("an artifact nothing refers to was kept")
	}
}
