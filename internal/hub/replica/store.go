package replica

import (
	"context"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// SharedStore is what a store shared by several hub replicas offers beyond store.Store
// (store.Postgres does). With a store that lacks it (SQLite) the hub is the only replica: it
// holds every lease, and its changes have nobody else to reach.
type SharedStore interface {
	// Publish sends the payloads, in order and each of at most store.MaxPayload bytes, to
	// every replica's Listen, this one's included.
	Publish(ctx context.Context, payloads ...string) error
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

var _ SharedStore = (*store.Postgres)(nil)

// EventKind is a change one replica tells the others of. The values are the wire format
// between replicas: replicas of different versions must agree on them.
type EventKind string

const (
	EventDesired  EventKind = "desired"  // clusters' desired states changed: wake their watches
	EventRemoved  EventKind = "removed"  // a cluster was removed: end its watches
	EventClusters EventKind = "clusters" // a cluster was added or relabelled: reschedule
	EventView     EventKind = "view"     // the lease holder stored a new fleet view
	// EventResync stands for changes a replica could not send (its outbox overflowed while
	// the store was away): every other replica resynchronises, as after a reconnect.
	EventResync EventKind = "resync"
	// EventIdentity: a shared identity file was replaced (a rotated admin token's hash):
	// every replica reads it again.
	EventIdentity EventKind = "identity"
)

// Event is a change notification. Replica names the sender; Publish fills it in.
//
// A desired-state change names its clusters in Clusters, as many as fit in one notification:
// one per cluster cost a PostgreSQL round trip each (10,000 clusters: seconds). A replica
// that knows only Cluster (before batching) wakes nobody for such a notification; one that
// receives Cluster (from such a replica) still wakes it.
type Event struct {
	Replica  string    `json:"r"` // a replica ignores its own events
	Kind     EventKind `json:"k"`
	Cluster  string    `json:"c,omitempty"`
	Clusters []string  `json:"cs,omitempty"`
}
