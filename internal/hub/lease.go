package hub

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// controllerLease is the lease whose holder runs the controller: it reads the fleet
// configuration, polls every source, packs artifacts and schedules. One replica at a time does,
// so a source is polled once per interval however many replicas run.
const controllerLease = "controller"

// lease is this replica's view of whether it holds a lease in a shared store. Without a
// shared store (SQLite: a single replica) it is always held.
type lease struct {
	st     sharedStore // nil: always held
	name   string
	holder string
	ttl    time.Duration
	log    *slog.Logger
	held   atomic.Bool
	// changed receives a value whenever held changes.
	changed chan struct{}
}

func newLease(st sharedStore, name, holder string, ttl time.Duration, log *slog.Logger) *lease {
	l := &lease{st: st, name: name, holder: holder, ttl: ttl, log: log, changed: make(chan struct{}, 1)}
	l.held.Store(st == nil)
	return l
}

// Held reports whether this replica holds the lease now.
func (l *lease) Held() bool { return l.held.Load() }

// run takes the lease when it is free and renews it every third of its TTL until ctx ends,
// then gives it up so another replica takes over at once. When renewing fails, the lease
// counts as lost half a TTL after the last success: before it can expire in the store and
// another replica can take it, so two replicas never both believe they hold it.
func (l *lease) run(ctx context.Context) {
	if l.st == nil {
		return
	}
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	var lastOK time.Time
	for {
		// Bounded, so that a database that stops answering counts as a failed renewal in
		// time, not as a renewal still under way while the lease expires.
		tryCtx, cancel := context.WithTimeout(ctx, l.ttl/3)
		held, err := l.st.TryLease(tryCtx, l.name, l.holder, l.ttl)
		cancel()
		switch {
		case ctx.Err() != nil:
			l.release()
			return
		case err != nil:
			held = l.Held() && time.Since(lastOK) < l.ttl/2
			l.log.Warn("lease not renewed", "lease", l.name, "held", held, "error", err)
		case held:
			lastOK = time.Now()
		}
		if was := l.held.Swap(held); was != held {
			l.log.Info("lease changed hands", "lease", l.name, "replica", l.holder, "held", held)
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			l.release()
			return
		case <-t.C:
		}
	}
}

func (l *lease) release() {
	if !l.held.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.st.ReleaseLease(ctx, l.name, l.holder); err != nil {
		l.log.Warn("lease not released; it expires by itself", "lease", l.name, "after", l.ttl, "error", err)
		return
	}
	l.log.Info("lease released", "lease", l.name, "replica", l.holder)
}
