package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// recordingTarget is a Target that records the reconciles the agent asks of it (removals and
// inventories are the scenarios' memTarget's).
type recordingTarget struct {
	mu           sync.Mutex
	reconcileErr error
	reconciles   []string // release of each Reconcile
	skips        []bool   // Options.SkipUnchanged of each Reconcile
}

func (r *recordingTarget) Reconcile(_ context.Context, objects []*unstructured.Unstructured, opts reconcile.Options) (*reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconciles = append(r.reconciles, opts.Name)
	r.skips = append(r.skips, opts.SkipUnchanged)
	return &reconcile.Result{Name: opts.Name}, r.reconcileErr
}

func (r *recordingTarget) Remove(_ context.Context, name string) (*reconcile.Result, error) {
	return &reconcile.Result{Name: name}, nil
}

func (r *recordingTarget) Inventories(context.Context) ([]string, error) { return nil, nil }

func (r *recordingTarget) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reconciles)
}

// newClockAgent is an agent of a fakeHub on a fake clock, reconciling into target; its loops
// are not running.
func newClockAgent(t *testing.T, target Target, clk clock.Clock) (*Agent, *fakeHub) {
	t.Helper()
	hub := newFakeHub(t)
	dir := filepath.Join(t.TempDir(), "state")
	hub.identity(dir, "edge-clock")
	a, err := New(t.Context(), Options{StateDir: dir, Target: target, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, hub
}

// plainArtifact puts an unpacked artifact in the agent's cache and returns its digest.
func plainArtifact(t *testing.T, a *Agent) string {
	t.Helper()
	hex := strings.Repeat("ab", 32)
	dir := filepath.Join(a.st.artifactDir(), hex, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(configMap("app")), 0o644); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex
}

func TestReconcileLoopRunsOnTheClock(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	target := &recordingTarget{}
	a, _ := newClockAgent(t, target, clk)
	digest := plainArtifact(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.reconcileLoop(ctx) }()
	defer func() { cancel(); <-done }()

	// idle: the loop has reconciled n times and waits on its timer.
	idle := func(what string, n int) {
		t.Helper()
		eventually.Within(t, 10*time.Second, func() error {
			if target.count() != n || clk.Waiters() != 1 || a.passes.Load() != 0 {
				return fmt.Errorf("%s: %d reconciles, %d timers, %d passes in flight; want %d reconciles and the loop waiting", what, target.count(), clk.Waiters(), a.passes.Load(), n)
			}
			return nil
		})
	}
	a.setDesired(desired.State{Generation: 1, ExplicitRemovals: true, Document: desired.Document{Assignments: []desired.Assignment{
		{Release: "app", Digest: digest, Path: "app", Namespace: "app", Interval: time.Minute},
	}}})
	idle("on the new desired state", 1)
	clk.Advance(59 * time.Second)
	idle("before the interval", 1)
	clk.Advance(time.Second)
	idle("at the interval", 2)

	// Failures are retried sooner than the interval: 2s, then 4s.
	target.mu.Lock()
	target.reconcileErr = errors.New("api server down")
	target.mu.Unlock()
	clk.Advance(60 * time.Second)
	idle("first failure", 3)
	clk.Advance(2 * time.Second)
	idle("first retry, 2s later", 4)
	clk.Advance(3 * time.Second)
	idle("second retry not before 4s", 4)
	clk.Advance(time.Second)
	idle("second retry, 4s later", 5)
}

func TestRenewalFollowsTheClock(t *testing.T) {
	t.Parallel()
	start := time.Now()
	clk := clock.NewFake(start)
	a, hub := newClockAgent(t, &recordingTarget{}, clk)
	next, err := a.renewIfDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The fake hub signs for 24h: renewal is due at 16h.
	if next < 15*time.Hour || next > 17*time.Hour {
		t.Fatalf("next check in %v; want about 16h", next)
	}
	clk.Advance(next - time.Minute)
	if _, err := a.renewIfDue(t.Context()); err != nil || hub.renewals != 0 {
		t.Fatalf("renewed %d times before two thirds of the lifetime (err %v)", hub.renewals, err)
	}
	clk.Advance(time.Minute)
	if _, err := a.renewIfDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.renewals != 1 {
		t.Errorf("renewed %d times at two thirds of the lifetime; want 1", hub.renewals)
	}
}

func TestHeartbeatCarriesARefusalAtOnce(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	a, hub := newClockAgent(t, &recordingTarget{}, clk)
	a.setDesired(desired.State{Generation: 1, ExplicitRemovals: true, Document: desired.Document{Assignments: []desired.Assignment{{Release: "baseline"}}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.heartbeatLoop(ctx) }()
	defer func() { cancel(); <-done }()
	beats := func() int {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.heartbeats)
	}
	// waitBeats: n heartbeats sent and the loop waiting on its timer again.
	waitBeats := func(what string, n int) {
		t.Helper()
		eventually.Within(t, 10*time.Second, hub.holds(what, func() bool { return beats() == n && clk.Waiters() == 1 }))
	}
	waitBeats("first heartbeat", 1)
	clk.Advance(a.opts.HeartbeatInterval)
	waitBeats("after an interval", 2)

	a.offer(&agentv1.DesiredState{Generation: 2, ExplicitRemovals: true})
	waitBeats("the refusal, without waiting for the interval", 3)
	if hb := hub.lastHeartbeat(); hb.Generation != 1 || hb.RefusedGeneration != 2 || !strings.Contains(hb.RefusedReason, `"baseline"`) {
		t.Errorf("heartbeat %v; want generation 1, refused 2 naming baseline", hb)
	}
	clk.Advance(a.opts.HeartbeatInterval)
	waitBeats("the refusal is repeated", 4)
	if hb := hub.lastHeartbeat(); hb.RefusedGeneration != 2 {
		t.Errorf("heartbeat %v; want the refusal repeated", hb)
	}
	a.offer(&agentv1.DesiredState{Generation: 3, ExplicitRemovals: true, Removed: []*agentv1.Tombstone{{Release: "baseline", Reason: "release-deleted"}}})
	waitBeats("the end of the refusal, at once", 5)
	if hb := hub.lastHeartbeat(); hb.Generation != 3 || hb.RefusedGeneration != 0 || hb.RefusedReason != "" {
		t.Errorf("heartbeat %v; want generation 3 and no refusal", hb)
	}
}

// A new revision skips the objects rendered as last applied only between drift checks: the
// periodic reconcile, a sync request and the first reconcile after a start read everything.
func TestSkipUnchangedOnlyBetweenDriftChecks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	interval := 5 * time.Minute
	tests := []struct {
		name          string
		changed, sync bool
		lastFull      time.Time
		want          bool
	}{
		{name: "new revision after a recent drift check", changed: true, lastFull: now.Add(-time.Minute), want: true},
		{name: "periodic drift check", changed: false, lastFull: now.Add(-interval), want: false},
		{name: "new revision when the drift check is due", changed: true, lastFull: now.Add(-interval), want: false},
		{name: "new revision, no drift check since start", changed: true, want: false},
		{name: "sync request", changed: true, sync: true, lastFull: now.Add(-time.Minute), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skipUnchanged(tt.changed, tt.sync, tt.lastFull, now, interval); got != tt.want {
				t.Errorf("skipUnchanged = %v, want %v", got, tt.want)
			}
		})
	}
}

// In the loop: the first reconcile after a start reads everything, a new revision then skips
// what it renders as last applied, and the periodic drift check reads everything again.
func TestReconcileLoopSkipsUnchangedOnlyForNewRevisions(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	target := &recordingTarget{}
	a, _ := newClockAgent(t, target, clk)
	digest := plainArtifact(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.reconcileLoop(ctx) }()
	defer func() { cancel(); <-done }()

	idle := func(what string, n int) {
		t.Helper()
		eventually.Within(t, 10*time.Second, func() error {
			if target.count() != n || clk.Waiters() != 1 || a.passes.Load() != 0 {
				return fmt.Errorf("%s: %d reconciles, %d timers, %d passes in flight; want %d reconciles and the loop waiting", what, target.count(), clk.Waiters(), a.passes.Load(), n)
			}
			return nil
		})
	}
	publish := func(gen int64, rev string) {
		a.setDesired(desired.State{Generation: gen, ExplicitRemovals: true, Document: desired.Document{Assignments: []desired.Assignment{
			{Release: "app", Digest: digest, Revision: rev, Path: "app", Namespace: "app", Interval: time.Minute},
		}}})
	}
	publish(1, "r1")
	idle("first reconcile after the start", 1)
	clk.Advance(10 * time.Second)
	publish(2, "r2")
	idle("new revision", 2)
	clk.Advance(60 * time.Second)
	idle("drift check on the interval", 3)
	clk.Advance(5 * time.Second)
	publish(3, "r3")
	idle("new revision after the drift check", 4)

	target.mu.Lock()
	defer target.mu.Unlock()
	if want := []bool{false, true, false, true}; !slices.Equal(target.skips, want) {
		t.Errorf("SkipUnchanged of each reconcile = %v, want %v", target.skips, want)
	}
}
