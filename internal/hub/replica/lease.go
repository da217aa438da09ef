package replica

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
)

// ControllerLease is the lease whose holder runs the controller: it reads the fleet
// configuration, polls every source, packs artifacts and schedules. One replica at a time does,
// so a source is polled once per interval however many replicas run.
const ControllerLease = "controller"

// LeaseOptions configure a Lease.
type LeaseOptions struct {
	// Store holds the lease; nil (a single replica) means the lease is always held.
	Store SharedStore
	// Name is the lease's name in the store; Holder is this replica's ID.
	Name, Holder string
	// TTL is how long the lease lasts unless renewed; it is renewed every third of it.
	TTL    time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Lease is this replica's view of whether it holds a lease in a shared store. Without a
// shared store it is always held.
type Lease struct {
	o       LeaseOptions
	held    atomic.Bool
	changed chan struct{}
	// answers counts the store's answers to TryLease, so that a test can wait for renewals
	// rather than sleep through them.
	answers atomic.Int64
}

// NewLease returns a lease; Run takes and renews it.
func NewLease(o LeaseOptions) *Lease {
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Lease{o: o, changed: make(chan struct{}, 1)}
	l.held.Store(o.Store == nil)
	return l
}

// Held reports whether this replica holds the lease now.
func (l *Lease) Held() bool { return l.held.Load() }

// Answers is how many times the store answered a take or renewal of the lease.
func (l *Lease) Answers() int64 { return l.answers.Load() }

// Changed receives a value whenever Held changed (changes in between coalesce).
func (l *Lease) Changed() <-chan struct{} { return l.changed }

// Run takes the lease when it is free and renews it every third of its TTL until ctx ends,
// then gives it up so another replica takes over at once. When renewing fails, the lease
// counts as lost half a TTL after the last success: before it can expire in the store and
// another replica can take it, so two replicas never both believe they hold it.
func (l *Lease) Run(ctx context.Context) {
	if l.o.Store == nil {
		return
	}
	ttl, log := l.o.TTL, l.o.Logger
	t := l.o.Clock.NewTimer(ttl / 3)
	defer t.Stop()
	var lastOK time.Time
	for {
		// Bounded, so that a database that stops answering counts as a failed renewal in
		// time, not as a renewal still under way while the lease expires.
		tryCtx, cancel := context.WithTimeout(ctx, ttl/3)
		held, err := l.o.Store.TryLease(tryCtx, l.o.Name, l.o.Holder, ttl)
		cancel()
		switch {
		case ctx.Err() != nil:
			l.release()
			return
		case err != nil:
			held = l.Held() && clock.Since(l.o.Clock, lastOK) < ttl/2
			log.Warn("lease not renewed", "lease", l.o.Name, "held", held, "error", err)
		case held:
			lastOK = l.o.Clock.Now()
		}
		if err == nil {
			l.answers.Add(1)
		}
		if was := l.held.Swap(held); was != held {
			log.Info("lease changed hands", "lease", l.o.Name, "replica", l.o.Holder, "held", held)
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			l.release()
			return
		case <-t.C():
			t.Reset(ttl / 3)
		}
	}
}

func (l *Lease) release() {
	if !l.held.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.o.Store.ReleaseLease(ctx, l.o.Name, l.o.Holder); err != nil {
		l.o.Logger.Warn("lease not released; it expires by itself", "lease", l.o.Name, "after", l.o.TTL, "error", err)
		return
	}
	l.o.Logger.Info("lease released", "lease", l.o.Name, "replica", l.o.Holder)
}
