package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/audit"
)

// ReplicaOptions configure this hub as one of several replicas sharing a store (PostgreSQL).
// A hub with a SQLite store is the only replica and ignores them.
type ReplicaOptions struct {
	// ID names this replica in leases, logs and change notifications; unique among the
	// replicas. Default: the host name and a random suffix, new at every start.
	ID string
	// LeaseTTL is how long the controller lease lasts unless renewed (every third of it):
	// the longest a dead replica's polling stays undone before another takes it over.
	// Default 15s.
	LeaseTTL time.Duration
}

func (o *ReplicaOptions) setDefaults() {
	if o.ID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.ID = fmt.Sprintf("%s-%s", host, hex.EncodeToString(b))
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
}

// replication is what a hub needs to be one of several replicas; its zero value is that of a
// single hub.
type replication struct {
	shared sharedStore // nil: the only replica
	fanout *fanout     // nil: the only replica
	lease  *lease      // always set: held for good without a shared store
}

// setupReplication runs in New before the CA and admin token are loaded: with a shared store
// it makes the data dir's CA and token those every replica shares, and wires change
// notifications into the watchers.
func (h *Hub) setupReplication(ctx context.Context) error {
	h.opts.Replica.setDefaults()
	shared, _ := h.store.(sharedStore)
	h.repl.shared = shared
	h.repl.lease = newLease(shared, controllerLease, h.opts.Replica.ID, h.opts.Replica.LeaseTTL, h.log)
	if shared == nil {
		return nil
	}
	if err := shareIdentity(ctx, shared, h.opts.DataDir, h.now()); err != nil {
		return err
	}
	h.repl.fanout = &fanout{h: h, st: shared}
	h.watchers.publish = h.repl.fanout.publish
	h.log.Info("hub replica sharing its store", "replica", h.opts.Replica.ID, "store", h.store)
	return nil
}

// runReplication starts, in g, the lease and the change listener of a replica.
func (h *Hub) runReplication(ctx context.Context, g *errgroup.Group) {
	g.Go(func() error { h.repl.lease.run(ctx); return nil })
	if f := h.repl.fanout; f != nil {
		g.Go(func() error { f.run(ctx); return nil })
	}
}

// IsLeader reports whether this replica holds the controller lease (always, for a single hub).
func (h *Hub) IsLeader() bool { return h.repl.lease.Held() }

// ReplicaID names this replica.
func (h *Hub) ReplicaID() string { return h.opts.Replica.ID }

// tagReplica names this replica in e's detail when it is one of several: each replica keeps
// its own audit chain (audit.db in its data dir), and a record says which chain, and so which
// replica, it belongs to once the chains are read side by side.
func (h *Hub) tagReplica(e *audit.Event) {
	if h.repl.shared == nil {
		return
	}
	d := make(map[string]any, len(e.Detail)+1)
	maps.Copy(d, e.Detail)
	d["replica"] = h.opts.Replica.ID
	e.Detail = d
}

// replicaCollectors are the metrics of replication: whether this replica holds the controller
// lease (1 on exactly one replica of a healthy set; always 1 on a single hub).
func replicaCollectors(h *Hub) []prometheus.Collector {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flotilla_hub_controller_lease_held",
		Help: "1 while this hub replica holds the controller lease (reads the fleet, polls sources, schedules), else 0.",
	}, func() float64 {
		if h.IsLeader() {
			return 1
		}
		return 0
	})
	return []prometheus.Collector{held}
}
