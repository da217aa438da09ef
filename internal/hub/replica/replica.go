package replica

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// DefaultLeaseTTL is Options.LeaseTTL's default.
const DefaultLeaseTTL = 15 * time.Second

// MaxIDLength bounds Options.ID, which every change notification carries.
const MaxIDLength = 253

// Options configure this hub as one of several replicas sharing a store (PostgreSQL).
// A hub with a SQLite store is the only replica and ignores them.
type Options struct {
	// ID names this replica in leases, logs and change notifications; unique among the
	// replicas. Default: the host name and a random suffix, new at every start.
	ID string
	// LeaseTTL is how long the controller lease lasts unless renewed (every third of it):
	// the longest a dead replica's polling stays undone before another takes it over.
	// Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// SecretsKeyFile holds the key (64 hex digits) that seals the shared secrets in a shared
	// store; required with one. Every replica reads the same file, a mounted Secret.
	SecretsKeyFile string
}

// SetDefaults fills in the zero fields.
func (o *Options) SetDefaults() {
	if o.ID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.ID = fmt.Sprintf("%s-%s", host, hex.EncodeToString(b))
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
}

// Config is what a Replication needs.
type Config struct {
	// Store is the hub's store: shared with other replicas when it is a SharedStore.
	Store   store.Store
	Options Options
	// Artifacts is this replica's artifact directory, where artifacts fetched from the
	// shared store are kept.
	Artifacts *artifact.Store
	// Identity is made that of the shared store before New returns.
	Identity Identity
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Replication is what a hub needs to be one of several replicas. With a store that cannot be
// shared it is that of a single hub: the lease is held for good, Publish and the shared-store
// methods do nothing.
type Replication struct {
	opts      Options
	shared    SharedStore // nil: the only replica
	fanout    *fanout     // nil: the only replica
	lease     *Lease
	artifacts *artifact.Store
	log       *slog.Logger
}

// New prepares replication. With a shared store it makes the data dir's identity the one
// every replica shares, so it must run before the hub loads its CA and admin token.
func New(ctx context.Context, c Config) (*Replication, error) {
	c.Options.SetDefaults()
	if len(c.Options.ID) > MaxIDLength {
		// Every change notification names its sender, in at most store.MaxPayload bytes.
		return nil, fmt.Errorf("replica ID %.20q...: %d bytes, longer than %d", c.Options.ID, len(c.Options.ID), MaxIDLength)
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	shared, _ := c.Store.(SharedStore)
	r := &Replication{opts: c.Options, shared: shared, artifacts: c.Artifacts, log: c.Logger}
	r.lease = NewLease(LeaseOptions{
		Store: shared, Name: ControllerLease, Holder: c.Options.ID, TTL: c.Options.LeaseTTL,
		Clock: c.Clock, Logger: c.Logger,
	})
	if shared == nil {
		return r, nil
	}
	var key []byte
	if len(c.Identity.Secrets) > 0 {
		if c.Options.SecretsKeyFile == "" {
			return nil, fmt.Errorf("a hub sharing its store (%v) needs --secrets-key-file: the CA key "+
				"the replicas share is kept sealed in the store with that key, never in clear "+
				"(make one with: openssl rand -hex 32 > secrets.key, and give every replica the same file)", c.Store)
		}
		var err error
		if key, err = LoadSecretsKey(c.Options.SecretsKeyFile); err != nil {
			return nil, err
		}
	}
	if err := shareIdentity(ctx, shared, c.Identity, key, c.Logger); err != nil {
		return nil, err
	}
	r.fanout = newFanout(shared, c.Options.ID, c.Clock, c.Logger)
	c.Logger.Info("hub replica sharing its store", "replica", c.Options.ID, "store", c.Store)
	return r, nil
}

// Run keeps the lease and listens to the other replicas' changes, calling on for each, until
// ctx ends. A single hub returns at once.
func (r *Replication) Run(ctx context.Context, on Handlers) {
	var wg sync.WaitGroup
	wg.Go(func() { r.lease.Run(ctx) })
	if r.fanout != nil {
		wg.Go(func() { r.fanout.run(ctx, on) })
		wg.Go(func() { r.fanout.send(ctx) })
	}
	wg.Wait()
}

// ID names this replica.
func (r *Replication) ID() string { return r.opts.ID }

// IsShared reports whether the store is shared with other replicas.
func (r *Replication) IsShared() bool { return r.shared != nil }

// Lease is the controller lease.
func (r *Replication) Lease() *Lease { return r.lease }

// Publish tells the other replicas of a change (nothing for a single hub). It queues the
// change and returns: Run sends it, merged with the changes queued with it, and again after a
// failure until it is sent.
func (r *Replication) Publish(e Event) {
	if r.fanout != nil {
		r.fanout.publish(e)
	}
}

// TagEvent names this replica in e's detail when it is one of several: each replica keeps
// its own audit chain (audit.db in its data dir), and a record says which chain, and so which
// replica, it belongs to once the chains are read side by side.
func (r *Replication) TagEvent(e *audit.Event) {
	if r.shared == nil {
		return
	}
	d := make(map[string]any, len(e.Detail)+1)
	maps.Copy(d, e.Detail)
	d["replica"] = r.opts.ID
	e.Detail = d
}

// Collectors are the metrics of replication: whether this replica holds the controller
// lease (1 on exactly one replica of a healthy set; always 1 on a single hub).
func (r *Replication) Collectors() []prometheus.Collector {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flotilla_hub_controller_lease_held",
		Help: "1 while this hub replica holds the controller lease (reads the fleet, polls sources, schedules), else 0.",
	}, func() float64 {
		if r.lease.Held() {
			return 1
		}
		return 0
	})
	return []prometheus.Collector{held}
}
