package replica

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Handlers are what a change from another replica means for this one. Each may be nil.
type Handlers struct {
	// OnDesired wakes the cluster's watch streams on this replica.
	OnDesired func(cluster string)
	// OnRemoved forgets the removed cluster's certificates and ends its streams here.
	OnRemoved func(cluster string)
	// OnClusters asks this replica's controller for a reschedule (done if it holds the lease).
	OnClusters func()
	// OnView adopts the fleet view the lease holder stored.
	OnView func(ctx context.Context)
	// OnIdentity reads the shared identity files again (a rotated admin token's hash).
	OnIdentity func(ctx context.Context)
	// OnResync makes up for notifications missed while not listening: it is called each
	// time listening starts (again).
	OnResync func(ctx context.Context)
}

// fanout carries changes between the replicas sharing a store: each replica publishes what it
// changed, and wakes (or ends) its own watch streams for what the others changed. Watches do
// not poll the store, so this is how a desired state written by the replica that schedules
// reaches an agent connected to another one, within the notification's round trip.
//
// Publishing queues the change in an outbox, which send empties: a reschedule that changes
// 10,000 clusters' desired states sends a few dozen notifications in one transaction rather
// than 10,000 one by one, and does not wait for them.
type fanout struct {
	st    SharedStore
	id    string
	clock clock.Clock
	log   *slog.Logger
	out   *outbox
}

func newFanout(st SharedStore, id string, clk clock.Clock, log *slog.Logger) *fanout {
	return &fanout{st: st, id: id, clock: clock.Or(clk), log: log, out: newOutbox()}
}

// publishTimeout bounds one send of notifications: a database that stopped answering must not
// hold the changes queued behind it for longer.
const publishTimeout = 5 * time.Second

// publish queues a change for the other replicas; send sends it.
func (f *fanout) publish(e Event) { f.out.add(e) }

// send sends the queued changes until ctx ends, then what is still queued, once. Changes that
// cannot be sent are kept, in order, and sent again after a backoff: a replica whose own
// listening connection stays up would otherwise never learn of them. If they pile up past the
// outbox's bound, one resync notification stands for all of them.
func (f *fanout) send(ctx context.Context) {
	const minWait, maxWait = 200 * time.Millisecond, 10 * time.Second
	wait := minWait
	for {
		select {
		case <-ctx.Done():
			_ = f.sendQueued(context.WithoutCancel(ctx)) // the last try: a failure is logged
			return
		case <-f.out.ready:
		}
		if err := f.sendQueued(ctx); err == nil {
			wait = minWait
			continue
		}
		select {
		case <-ctx.Done():
			_ = f.sendQueued(context.WithoutCancel(ctx)) // the last try: a failure is logged
			return
		case <-f.clock.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

// sendQueued sends everything queued in one transaction; on failure it puts it back.
func (f *fanout) sendQueued(ctx context.Context) error {
	events, overflowed := f.out.take()
	if overflowed {
		f.log.Warn("too many changes queued for the other replicas; they are told to resynchronise instead")
	}
	if len(events) == 0 {
		return nil
	}
	ps, err := payloads(f.id, events, store.MaxPayload)
	if err != nil {
		f.log.Error("change notifications not sent", "error", err)
	}
	if len(ps) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := f.st.Publish(ctx, ps...); err != nil {
		f.log.Warn("changes not sent to the other replicas; retrying", "notifications", len(ps), "error", err)
		f.out.putBack(events)
		return err
	}
	return nil
}

// run listens for the other replicas' changes until ctx ends, reconnecting with backoff.
func (f *fanout) run(ctx context.Context, on Handlers) {
	const minWait, maxWait = 200 * time.Millisecond, 10 * time.Second
	wait := minWait
	for {
		start := f.clock.Now()
		err := f.st.Listen(ctx, func(payload string) { f.receive(ctx, on, payload) })
		if ctx.Err() != nil {
			return
		}
		if clock.Since(f.clock, start) > maxWait {
			wait = minWait // it was up for a while: this is a new failure
		}
		f.log.Warn("not listening to the other replicas' changes; retrying", "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-f.clock.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

func (f *fanout) receive(ctx context.Context, on Handlers, payload string) {
	if payload == "" {
		if on.OnResync != nil {
			on.OnResync(ctx)
		}
		return
	}
	var e Event
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		f.log.Warn("ignoring a change notification that does not parse", "payload", payload, "error", err)
		return
	}
	if e.Replica == f.id {
		return // done here already, before it was published
	}
	switch {
	case e.Kind == EventDesired && on.OnDesired != nil:
		if e.Cluster != "" {
			on.OnDesired(e.Cluster) // from a replica of an earlier version
		}
		for _, c := range e.Clusters {
			on.OnDesired(c)
		}
	case e.Kind == EventResync && on.OnResync != nil:
		on.OnResync(ctx)
	case e.Kind == EventRemoved && on.OnRemoved != nil:
		on.OnRemoved(e.Cluster)
	case e.Kind == EventClusters && on.OnClusters != nil:
		on.OnClusters()
	case e.Kind == EventView && on.OnView != nil:
		on.OnView(ctx)
	case e.Kind == EventIdentity && on.OnIdentity != nil:
		on.OnIdentity(ctx)
	}
}
