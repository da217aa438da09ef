package replica

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
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
	// OnResync makes up for notifications missed while not listening: it is called each
	// time listening starts (again).
	OnResync func(ctx context.Context)
}

// fanout carries changes between the replicas sharing a store: each replica publishes what it
// changed, and wakes (or ends) its own watch streams for what the others changed. Watches do
// not poll the store, so this is how a desired state written by the replica that schedules
// reaches an agent connected to another one, within the notification's round trip.
type fanout struct {
	st    SharedStore
	id    string
	clock clock.Clock
	log   *slog.Logger
}

// publishTimeout bounds one notification: it runs on the path of a user's request or of a
// reschedule, which must not hang on a database that stopped answering.
const publishTimeout = 5 * time.Second

// publish tells the other replicas of a change. A notification that cannot be sent is logged:
// the database is then unreachable for the other replicas too, and each of them resynchronises
// its watches when its listening connection comes back.
func (f *fanout) publish(e Event) {
	e.Replica = f.id
	payload, err := json.Marshal(e)
	if err != nil {
		f.log.Error("encode change notification", "kind", e.Kind, "cluster", e.Cluster, "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := f.st.Publish(ctx, string(payload)); err != nil {
		f.log.Warn("change not sent to the other replicas", "kind", e.Kind, "cluster", e.Cluster, "error", err)
	}
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
		on.OnDesired(e.Cluster)
	case e.Kind == EventRemoved && on.OnRemoved != nil:
		on.OnRemoved(e.Cluster)
	case e.Kind == EventClusters && on.OnClusters != nil:
		on.OnClusters()
	case e.Kind == EventView && on.OnView != nil:
		on.OnView(ctx)
	}
}
