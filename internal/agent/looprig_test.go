package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// call is one Reconcile a versionTarget saw: which release, which version of its ConfigMap
// (data.version), and with which prune and self-heal.
type call struct {
	release, version string
	prune, selfHeal  bool
}

func (c call) String() string {
	return fmt.Sprintf("%s@%s prune=%t selfHeal=%t", c.release, c.version, c.prune, c.selfHeal)
}

// versionTarget records what the agent applies.
type versionTarget struct {
	mu    sync.Mutex
	calls []call
	// hold makes a reconcile of the release wait until its channel is closed (or the
	// reconcile's context ends), before it is recorded: a render or an API call that hangs.
	hold map[string]chan struct{}
}

func (v *versionTarget) Reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts reconcile.Options) (*reconcile.Result, error) {
	v.mu.Lock()
	wait := v.hold[opts.Name]
	v.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return &reconcile.Result{Name: opts.Name}, ctx.Err()
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	c := call{release: opts.Name, prune: opts.Prune && !opts.DeferPrune, selfHeal: opts.SelfHeal}
	if len(objects) > 0 {
		c.version, _, _ = unstructured.NestedString(objects[0].Object, "data", "version")
	}
	v.calls = append(v.calls, c)
	return &reconcile.Result{Name: opts.Name}, nil
}

func (v *versionTarget) Remove(_ context.Context, name string) (*reconcile.Result, error) {
	return &reconcile.Result{Name: name}, nil
}

func (v *versionTarget) Inventories(context.Context) ([]string, error) { return nil, nil }

// holdRelease makes the release's reconciles wait until the returned function is called.
func (v *versionTarget) holdRelease(release string) (free func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.hold == nil {
		v.hold = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	v.hold[release] = ch
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		delete(v.hold, release)
		close(ch)
	}
}

func (v *versionTarget) seen() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]string, len(v.calls))
	for i, c := range v.calls {
		out[i] = c.String()
	}
	return out
}

// loopRig runs an agent's reconcile loop on a fake clock against a fakeHub that serves
// artifacts; desired states are handed to the agent directly.
type loopRig struct {
	t      *testing.T
	clk    *clock.Fake
	target *versionTarget
	hub    *fakeHub
	dir    string
	a      *Agent
	stop   func()
}

func newLoopRig(t *testing.T, start time.Time) *loopRig {
	t.Helper()
	r := &loopRig{t: t, clk: clock.NewFake(start), target: &versionTarget{}, hub: newFakeHub(t)}
	r.dir = filepath.Join(t.TempDir(), "state")
	r.hub.identity(r.dir, "edge-gates")
	r.start()
	return r
}

// start opens the agent on the state dir and runs its reconcile loop.
func (r *loopRig) start() {
	r.t.Helper()
	r.a, r.stop = runLoop(r.t, Options{StateDir: r.dir, Target: r.target, Clock: r.clk})
	r.t.Cleanup(r.stop)
}

// restart stops the agent and starts a new one on the same state dir (and cached desired
// state).
func (r *loopRig) restart() {
	r.t.Helper()
	r.stop()
	r.start()
}

// version packs an artifact whose app/cm.yaml ConfigMap has data.version v.
func (r *loopRig) version(release, v string) string {
	return r.hub.addArtifact(map[string]string{release + "/cm.yaml": fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {version: %q}\n", release, v)})
}

// idle waits until the target saw want and the loop waits on its timer with no lane's pass in
// flight.
func (r *loopRig) idle(what string, want ...string) {
	r.t.Helper()
	r.idleWhen(what, func() bool { return true }, want...)
}

// idleWhen is idle once cond holds too: for a pass that reconciles nothing, cond says that
// it happened (a status reached the outbox).
func (r *loopRig) idleWhen(what string, cond func() bool, want ...string) {
	r.t.Helper()
	eventually.Within(r.t, 20*time.Second, func() error {
		seen, holds := r.target.seen(), cond()
		if strings.Join(seen, "\n") != strings.Join(want, "\n") || r.clk.Waiters() != 1 || r.a.passes.Load() != 0 || !holds {
			return fmt.Errorf("%s: reconciles\n  %s\nwant\n  %s\n(%d timers, %d passes in flight, condition holds: %v)",
				what, strings.Join(seen, "\n  "), strings.Join(want, "\n  "), r.clk.Waiters(), r.a.passes.Load(), holds)
		}
		return nil
	})
}

// last is the newest status of release in the outbox.
func (r *loopRig) last(release string) *agentv1.AssignmentStatus {
	r.t.Helper()
	reports, err := r.a.st.pending(1 << 20)
	if err != nil {
		r.t.Fatal(err)
	}
	var out *agentv1.AssignmentStatus
	for _, rep := range reports {
		for _, st := range rep.Statuses {
			if st.Release == release {
				out = st
			}
		}
	}
	if out == nil {
		r.t.Fatalf("no status of %s in the outbox", release)
	}
	return out
}

// statuses are the statuses of release in the outbox, oldest first.
func (r *loopRig) statuses(release string) []*agentv1.AssignmentStatus {
	r.t.Helper()
	reports, err := r.a.st.pending(1 << 20)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*agentv1.AssignmentStatus
	for _, rep := range reports {
		for _, st := range rep.Statuses {
			if st.Release == release {
				out = append(out, st)
			}
		}
	}
	return out
}

type wantStatus struct {
	phase, revision, waiting, pending, syncID string
}

func (r *loopRig) expect(release string, want wantStatus) {
	r.t.Helper()
	st := r.last(release)
	got := wantStatus{phase: st.Phase, revision: st.Revision, waiting: st.Waiting, pending: st.PendingRevision, syncID: st.SyncId}
	if got != want {
		r.t.Errorf("status of %s:\n got %+v\nwant %+v", release, got, want)
	}
}

func app(release, revision, digest string) desired.Assignment {
	return desired.Assignment{Release: release, Revision: revision, Digest: digest, Path: release, Namespace: release,
		Prune: true, SelfHeal: true, Interval: 24 * time.Hour, Vars: map[string]string{}}
}

func desiredAt(gen int64, gates []window.Gate, as ...desired.Assignment) desired.State {
	return desired.State{Generation: gen, ExplicitRemovals: true, Document: desired.Document{Assignments: as, Gates: gates}}
}

var noon = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// runLoop opens an agent on opts and runs its reconcile loop; stop (safe to call more than
// once) ends the loop and closes the agent, failing the test if the close fails.
func runLoop(t *testing.T, opts Options) (a *Agent, stop func()) {
	t.Helper()
	a, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.reconcileLoop(ctx) }()
	var once sync.Once
	return a, func() {
		once.Do(func() {
			cancel()
			<-done
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}
