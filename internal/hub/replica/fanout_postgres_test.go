package replica_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// pgReplica is a Replication on a PostgreSQL store, running until its test ends, with what
// the other replicas told it.
type pgReplica struct {
	*replica.Replication
	log *logRecorder

	mu      sync.Mutex
	got     []string // "desired c", "removed c", "resync"
	desired map[string]int
}

func startPGReplica(t *testing.T, dsn, id string) *pgReplica {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &pgReplica{log: &logRecorder{}, desired: map[string]int{}}
	r.Replication, err = replica.New(t.Context(), replica.Config{
		Store: st, Options: replica.Options{ID: id}, Logger: slog.New(r.log),
		Identity: replica.Identity{DataDir: t.TempDir(), Create: func() error { return nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, replica.Handlers{
			OnDesired: func(c string) { r.note("desired "+c, c) },
			OnRemoved: func(c string) { r.note("removed "+c, "") },
			OnResync:  func(context.Context) { r.note("resync", "") },
		})
	}()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	return r
}

func (r *pgReplica) note(what, desired string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, what)
	if desired != "" {
		r.desired[desired]++
	}
}

// received returns what the replica was told so far.
func (r *pgReplica) received() (got []string, desired map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := make(map[string]int, len(r.desired))
	for c, n := range r.desired {
		d[c] = n
	}
	return append([]string(nil), r.got...), d
}

// listens is the condition that r, named name, was told something: its first resync, once
// it listens.
func listens(name string, r *pgReplica) func() error {
	return func() error {
		if got, _ := r.received(); len(got) == 0 {
			return fmt.Errorf("%s was told nothing yet, want its first resync once it listens", name)
		}
		return nil
	}
}

// wokenFor is the condition that r, named name, was woken for n clusters.
func wokenFor(name string, r *pgReplica, n int) func() error {
	return func() error {
		if _, d := r.received(); len(d) != n {
			return fmt.Errorf("%s was woken for %d clusters, want %d", name, len(d), n)
		}
		return nil
	}
}

// logs is the condition that r, named name, logged a message containing part.
func logs(name string, r *pgReplica, part string) func() error {
	return func() error {
		if !r.log.logged(part) {
			return fmt.Errorf("%s has not logged %q yet", name, part)
		}
		return nil
	}
}

// logRecorder is a slog handler that keeps the messages logged.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *logRecorder) logged(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, part) {
			return true
		}
	}
	return false
}

// clusterNames are n cluster names as long as real ones tend to be (46 bytes): a wake-up of
// all of them takes many notifications.
func clusterNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cluster-%05d.eu-west-1.production.example.com", i)
	}
	return out
}

// A reschedule that changes thousands of clusters' desired states wakes every one of them
// on the other replica, once each; a removal published after it arrives after it.
func TestFanoutOnPostgresWakesEveryCluster(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a := startPGReplica(t, dsn, "replica-a")
	b := startPGReplica(t, dsn, "replica-b")
	eventually.Within(t, time.Minute, listens("replica-b", b))

	names := clusterNames(5000)
	for _, c := range names {
		a.Publish(replica.Event{Kind: replica.EventDesired, Cluster: c})
	}
	a.Publish(replica.Event{Kind: replica.EventRemoved, Cluster: names[0]})
	eventually.Within(t, time.Minute, func() error {
		got, d := b.received()
		if last := got[len(got)-1]; last != "removed "+names[0] {
			return fmt.Errorf("replica-b was last told %q (woken for %d clusters), want the removal of %s", last, len(d), names[0])
		}
		return nil
	})
	got, desired := b.received()
	for _, c := range names {
		if desired[c] != 1 {
			t.Errorf("%s woken %d times on replica-b, want once", c, desired[c])
		}
	}
	if want := 1 + len(names) + 1; len(got) != want { // the first resync, the wakes, the removal
		t.Errorf("replica-b was told %d things, want %d", len(got), want)
	}
	if got, _ := a.received(); len(got) != 1 {
		t.Errorf("replica-a was told %d things, want only its first resync: its own changes are done already", len(got))
	}
}

// Changes a replica cannot send while it is cut off the database reach the other replicas
// once it is back, although their own connections never broke (so they never resynchronise).
// Before batching, such a change was logged and lost.
func TestFanoutOnPostgresSendsAgainAfterStoreFailure(t *testing.T) {
	t.Parallel()
	dsn, proxied, proxy := pgtest.BehindProxy(t)
	a := startPGReplica(t, proxied, "replica-a")
	b := startPGReplica(t, dsn, "replica-b")
	eventually.Within(t, time.Minute, listens("replica-b", b))

	proxy.Refuse(true)
	proxy.Cut()
	names := clusterNames(300)
	for _, c := range names {
		a.Publish(replica.Event{Kind: replica.EventDesired, Cluster: c})
	}
	eventually.Within(t, time.Minute, logs("replica-a", a, "not sent to the other replicas"))
	proxy.Refuse(false)
	eventually.Within(t, time.Minute, wokenFor("replica-b", b, len(names)))
	if got, _ := b.received(); len(got) != 1+len(names) {
		t.Errorf("replica-b was told %d things, want its first resync and %d wakes", len(got), len(names))
	}
}

// A notification missed while a replica's listening connection is down is made up for: once
// it listens again, the replica resynchronises (the hub then wakes every watch it holds and
// ends those of removed clusters).
func TestFanoutOnPostgresResyncsAfterReconnect(t *testing.T) {
	t.Parallel()
	dsn, proxied, proxy := pgtest.BehindProxy(t)
	a := startPGReplica(t, dsn, "replica-a")
	b := startPGReplica(t, proxied, "replica-b")
	c := startPGReplica(t, dsn, "replica-c") // stays connected: shows the changes were sent
	eventually.Within(t, time.Minute, listens("replica-b", b))
	eventually.Within(t, time.Minute, listens("replica-c", c))

	proxy.Refuse(true)
	proxy.Cut()
	eventually.Within(t, time.Minute, logs("replica-b", b, "not listening to the other replicas' changes"))
	names := clusterNames(1000)
	for _, c := range names {
		a.Publish(replica.Event{Kind: replica.EventDesired, Cluster: c})
	}
	eventually.Within(t, time.Minute, wokenFor("replica-c", c, len(names)))
	proxy.Refuse(false)
	eventually.Within(t, time.Minute, func() error {
		if got, _ := b.received(); len(got) < 2 || got[len(got)-1] != "resync" {
			return fmt.Errorf("replica-b was told %q, want a resync after its first", got)
		}
		return nil
	})
	if _, desired := b.received(); len(desired) != 0 {
		t.Errorf("replica-b was woken for %d clusters while not listening; the test did not cut it off", len(desired))
	}
}
