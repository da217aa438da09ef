package hub

import (
	"context"
	"path/filepath"

	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/pki"
)

// ReplicaOptions configure this hub as one of several replicas sharing a store (PostgreSQL).
// A hub with a SQLite store is the only replica and ignores them.
type ReplicaOptions = replica.Options

// setupReplication runs in New before the CA and admin token are loaded: with a shared store
// it makes the data dir's CA and token those every replica shares.
func (h *Hub) setupReplication(ctx context.Context) error {
	var err error
	h.repl, err = replica.New(ctx, replica.Config{
		Store: h.store, Options: h.opts.Replica, Artifacts: h.artifacts, Clock: h.clock, Logger: h.log,
		Identity: replica.Identity{
			DataDir: h.opts.DataDir,
			Files:   []string{pki.CACertFile, pki.CAKeyFile, AdminTokenFile},
			Secrets: []string{pki.CAKeyFile, AdminTokenFile},
			Create: func() error {
				if _, err := pki.LoadOrCreateCA(h.opts.DataDir, h.clock.Now()); err != nil {
					return err
				}
				_, err := loadOrCreateToken(filepath.Join(h.opts.DataDir, AdminTokenFile))
				return err
			},
		},
	})
	if err != nil {
		return err
	}
	h.opts.Replica.ID = h.repl.ID()
	// A change of a cluster's watches here reaches the other replicas' watches.
	h.watchers.OnNotify = func(c string) { h.repl.Publish(replica.Event{Kind: replica.EventDesired, Cluster: c}) }
	h.watchers.OnClose = func(c string) { h.repl.Publish(replica.Event{Kind: replica.EventRemoved, Cluster: c}) }
	return nil
}

// runReplication keeps the lease and applies the other replicas' changes until ctx ends.
func (h *Hub) runReplication(ctx context.Context) {
	h.repl.Run(ctx, replica.Handlers{
		OnDesired: h.watchers.NotifyLocal,
		OnRemoved: func(c string) {
			h.auth.ForgetCluster(c)
			h.watchers.CloseLocal(c)
		},
		OnClusters: h.ctrl.Wake,
		OnView:     h.ctrl.AdoptView,
		OnResync:   h.resync,
	})
}

// resync makes up for notifications missed while not listening: certificates are checked
// against the store again, every watch stream here re-reads its desired state (and ends if
// its cluster is gone), the controller reschedules if it holds the lease, and otherwise
// adopts the holder's fleet view.
func (h *Hub) resync(ctx context.Context) {
	h.auth.ForgetAll() // a removal may be among the missed notifications
	// One read of every cluster rather than one per open watch: 10,000 agents resync at once.
	var registered map[string]bool
	if clusters, err := h.store.ListClusters(ctx); err == nil {
		registered = make(map[string]bool, len(clusters))
		for _, c := range clusters {
			registered[c.Name] = true
		}
	}
	for _, c := range h.watchers.Clusters() {
		if registered != nil && !registered[c] {
			h.watchers.CloseLocal(c)
			continue
		}
		h.watchers.NotifyLocal(c)
	}
	h.ctrl.Wake()
	h.ctrl.AdoptView(ctx)
}

// IsLeader reports whether this replica holds the controller lease (always, for a single hub).
func (h *Hub) IsLeader() bool { return h.repl.Lease().Held() }

// ReplicaID names this replica.
func (h *Hub) ReplicaID() string { return h.repl.ID() }
