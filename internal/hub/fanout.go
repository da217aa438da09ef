package hub

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// sharedStore is what a store shared by several hub replicas offers beyond store.Store
// (store.Postgres does). With a store that lacks it (SQLite) this hub is the only replica: it
// holds every lease, and its changes have nobody else to reach.
type sharedStore interface {
	// Publish sends payload to every replica's Listen, this one's included.
	Publish(ctx context.Context, payload string) error
	// Listen calls fn("") once listening (anything published before was missed), then fn for
	// each payload, until ctx ends (nil) or the connection fails (an error; call it again).
	Listen(ctx context.Context, fn func(payload string)) error
	// TryLease takes or renews lease name for holder for ttl and reports whether holder has it.
	TryLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// ReleaseLease gives the lease up if holder has it.
	ReleaseLease(ctx context.Context, name, holder string) error
	// PutArtifact stores an artifact's bytes under its (verified) digest, once.
	PutArtifact(ctx context.Context, digest string, data []byte) error
	// GetArtifact returns the bytes stored under digest, or store.ErrNotFound.
	GetArtifact(ctx context.Context, digest string) ([]byte, error)
	// DeleteArtifactsExcept deletes the stored artifacts not in keep.
	DeleteArtifactsExcept(ctx context.Context, keep map[string]bool) (int, error)
	// ShareFiles stores files whose names are not stored yet and returns the stored ones.
	ShareFiles(ctx context.Context, files map[string][]byte) (map[string][]byte, error)
	// PutSharedFile stores data under name, replacing what was there.
	PutSharedFile(ctx context.Context, name string, data []byte) error
	// SharedFiles returns the stored files among names.
	SharedFiles(ctx context.Context, names []string) (map[string][]byte, error)
}

var _ sharedStore = (*store.Postgres)(nil)

// eventKind is a change one replica tells the others of.
type eventKind string

const (
	eventDesired  eventKind = "desired"  // a cluster's desired state changed: wake its watches
	eventRemoved  eventKind = "removed"  // a cluster was removed: end its watches
	eventClusters eventKind = "clusters" // a cluster was added or relabelled: reschedule
	eventView     eventKind = "view"     // the lease holder stored a new fleet view
)

// event is the payload of a change notification.
type event struct {
	Replica string    `json:"r"` // sender; a replica ignores its own events
	Kind    eventKind `json:"k"`
	Cluster string    `json:"c,omitempty"`
}

// fanout carries changes between the replicas sharing a store: each replica publishes what it
// changed, and wakes (or ends) its own watch streams for what the others changed. Watches do
// not poll the store, so this is how a desired state written by the replica that schedules
// reaches an agent connected to another one, within the notification's round trip.
type fanout struct {
	h  *Hub
	st sharedStore
}

// publishTimeout bounds one notification: it runs on the path of a user's request or of a
// reschedule, which must not hang on a database that stopped answering.
const publishTimeout = 5 * time.Second

// publish tells the other replicas of a change. A notification that cannot be sent is logged:
// the database is then unreachable for the other replicas too, and each of them resynchronises
// its watches when its listening connection comes back.
func (f *fanout) publish(kind eventKind, cluster string) {
	payload, err := json.Marshal(event{Replica: f.h.opts.Replica.ID, Kind: kind, Cluster: cluster})
	if err != nil {
		f.h.log.Error("encode change notification", "kind", kind, "cluster", cluster, "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := f.st.Publish(ctx, string(payload)); err != nil {
		f.h.log.Warn("change not sent to the other replicas", "kind", kind, "cluster", cluster, "error", err)
	}
}

// run listens for the other replicas' changes until ctx ends, reconnecting with backoff.
func (f *fanout) run(ctx context.Context) {
	const minWait, maxWait = 200 * time.Millisecond, 10 * time.Second
	wait := minWait
	for {
		start := time.Now()
		err := f.st.Listen(ctx, func(payload string) { f.receive(ctx, payload) })
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > maxWait {
			wait = minWait // it was up for a while: this is a new failure
		}
		f.h.log.Warn("not listening to the other replicas' changes; retrying", "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

func (f *fanout) receive(ctx context.Context, payload string) {
	if payload == "" {
		f.resync(ctx)
		return
	}
	var e event
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		f.h.log.Warn("ignoring a change notification that does not parse", "payload", payload, "error", err)
		return
	}
	if e.Replica == f.h.opts.Replica.ID {
		return // done here already, before it was published
	}
	switch e.Kind {
	case eventDesired:
		f.h.watchers.notifyLocal(e.Cluster)
	case eventRemoved:
		f.h.auth.forgetCluster(e.Cluster)
		f.h.watchers.closeLocal(e.Cluster)
	case eventClusters:
		f.h.ctrl.wake()
	case eventView:
		f.h.ctrl.adoptView(ctx)
	}
}

// resync makes up for notifications missed while not listening: certificates are checked
// against the store again, every watch stream here re-reads its desired state (and ends if
// its cluster is gone), the controller reschedules if it holds the lease, and otherwise
// adopts the holder's fleet view.
func (f *fanout) resync(ctx context.Context) {
	f.h.auth.forgetAll() // a removal may be among the missed notifications
	for _, c := range f.h.watchers.clusters() {
		if _, err := f.h.store.GetCluster(ctx, c); errors.Is(err, store.ErrNotFound) {
			f.h.watchers.closeLocal(c)
			continue
		}
		f.h.watchers.notifyLocal(c)
	}
	f.h.ctrl.wake()
	f.h.ctrl.adoptView(ctx)
}
