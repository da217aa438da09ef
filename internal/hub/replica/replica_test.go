package replica

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeShared is a SharedStore in memory: a lease whose renewals fail while err is set, and a
// record of what was published.
type fakeShared struct {
	SharedStore // the methods a test does not use panic
	mu          sync.Mutex
	err         error
	released    bool
	published   []string
}

func (f *fakeShared) TryLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err == nil, f.err
}

func (f *fakeShared) ReleaseLease(ctx context.Context, name, holder string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
	return nil
}

func (f *fakeShared) Publish(ctx context.Context, payloads ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.published = append(f.published, payloads...)
	return nil
}

func (f *fakeShared) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// TestLease moves time in a synctest bubble: renewals every third of the TTL, a lease kept
// while renewals fail for less than half a TTL and lost after, taken again when the store
// answers, and released when the replica stops.
func TestLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = 30 * time.Second
		st := &fakeShared{}
		l := NewLease(LeaseOptions{Store: st, Name: ControllerLease, Holder: "a", TTL: ttl})
		if l.Held() {
			t.Fatal("held before Run")
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { l.Run(ctx); close(done) }()
		changed := func() bool {
			select {
			case <-l.Changed():
				return true
			default:
				return false
			}
		}
		synctest.Wait()
		if !l.Held() || !changed() {
			t.Fatalf("after the first try: held %v, want true and a change", l.Held())
		}
		steps := []struct {
			name        string
			storeErr    error
			wantHeld    bool
			wantChanged bool
		}{
			{"a renewal fails a third of a TTL after the last success: still held", errors.New("down"), true, false},
			{"two thirds of a TTL without a renewal: lost before it can expire", errors.New("down"), false, true},
			{"the store answers again: taken again", nil, true, true},
			{"renewed", nil, true, false},
		}
		for _, s := range steps {
			st.setErr(s.storeErr)
			// synctest bubble: this Sleep advances the bubble's fake clock, no real wait.
			time.Sleep(ttl / 3)
			synctest.Wait()
			if got, ch := l.Held(), changed(); got != s.wantHeld || ch != s.wantChanged {
				t.Errorf("%s: held %v, changed %v; want %v, %v", s.name, got, ch, s.wantHeld, s.wantChanged)
			}
		}
		cancel()
		<-done
		if l.Held() || !st.released {
			t.Errorf("after Run returned: held %v, released %v; want false, true", l.Held(), st.released)
		}
	})
}

func TestLeaseWithoutSharedStoreIsHeld(t *testing.T) {
	t.Parallel()
	l := NewLease(LeaseOptions{Name: ControllerLease, Holder: "a", TTL: time.Second})
	l.Run(t.Context()) // returns at once
	if !l.Held() {
		t.Error("a single hub's lease is not held")
	}
}

func TestFanoutReceive(t *testing.T) {
	t.Parallel()
	var got []string
	on := Handlers{
		OnDesired:  func(c string) { got = append(got, "desired "+c) },
		OnRemoved:  func(c string) { got = append(got, "removed "+c) },
		OnClusters: func() { got = append(got, "clusters") },
		OnView:     func(context.Context) { got = append(got, "view") },
		OnResync:   func(context.Context) { got = append(got, "resync") },
	}
	st := &fakeShared{}
	log := slog.New(slog.DiscardHandler)
	f := newFanout(st, "a", nil, log)
	b := newFanout(st, "b", nil, log)
	for _, e := range []Event{{Kind: EventDesired, Cluster: "eu-1"}, {Kind: EventRemoved, Cluster: "eu-2"}, {Kind: EventClusters}, {Kind: EventView}} {
		b.publish(e)
	}
	b.publish(Event{Kind: EventDesired, Cluster: "eu-3"})
	b.publish(Event{Kind: EventDesired, Cluster: "eu-4"})
	b.publish(Event{Kind: EventResync})
	f.publish(Event{Kind: EventClusters}) // its own: ignored
	for _, o := range []*fanout{b, f} {
		if err := o.sendQueued(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	f.receive(t.Context(), on, "")
	for _, p := range st.published {
		f.receive(t.Context(), on, p)
	}
	f.receive(t.Context(), on, "not json")
	want := []string{"resync", "desired eu-1", "removed eu-2", "clusters", "view", "desired eu-3", "desired eu-4", "resync"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handlers called (-want +got):\n%s", diff)
	}
	// The wire format between replicas: one cluster as before batching, several in "cs".
	for i, want := range map[int]string{0: `{"r":"b","k":"desired","c":"eu-1"}`, 4: `{"r":"b","k":"desired","cs":["eu-3","eu-4"]}`} {
		if st.published[i] != want {
			t.Errorf("payload %d: %s, want %s", i, st.published[i], want)
		}
	}
}
