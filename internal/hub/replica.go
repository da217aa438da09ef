package hub

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/store"
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
			Secrets: []string{pki.CAKeyFile},
			Hashed:  []string{AdminTokenFile},
			Hash:    hashAdminToken,
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
		OnIdentity: h.reloadAdminToken,
		OnResync:   h.resync,
	})
}

// hashAdminToken is what a shared store keeps of admin.token: its hash (access.HashBootstrap).
func hashAdminToken(data []byte) ([]byte, error) {
	sum, err := access.HashBootstrap(string(data))
	return []byte(sum), err
}

// reloadAdminToken takes the admin token's hash the replicas share (another replica, or
// `flotilla hub rotate-admin-token`, may have replaced it): the old token stops opening this
// replica, and its data dir's admin.token gets the new hash unless it holds the token itself.
func (h *Hub) reloadAdminToken(ctx context.Context) {
	files, err := h.repl.SharedFiles(ctx, []string{AdminTokenFile})
	if err != nil {
		h.log.Warn("could not read the shared admin token's hash; keeping the one in use", "error", err)
		return
	}
	sum, ok := files[AdminTokenFile]
	if !ok || !access.IsBootstrapHash(string(sum)) {
		return // a single hub, or a row a replica of an older version keeps: it is taken at start
	}
	changed, err := h.bootstrap.Set(string(sum))
	if err != nil {
		h.log.Warn("ignoring a shared admin token's hash that does not parse", "error", err)
		return
	}
	if !changed {
		return
	}
	h.log.Info("took the admin token the replicas share now: the one before no longer opens this replica")
	path := filepath.Join(h.opts.DataDir, AdminTokenFile)
	if mine, err := os.ReadFile(path); err == nil {
		if own, err := hashAdminToken(mine); err == nil && bytes.Equal(own, sum) {
			return // this data dir holds the token of that hash
		}
	}
	if err := os.WriteFile(path, append(sum, '\n'), 0o600); err != nil {
		h.log.Warn("took the rotated admin token, but could not write its hash to the data dir", "file", path, "error", err)
	}
}

// resync makes up for notifications missed while not listening: certificates are checked
// against the store again, every watch stream here re-reads its desired state (and ends if
// its cluster is gone), the controller reschedules if it holds the lease, and otherwise
// adopts the holder's fleet view.
func (h *Hub) resync(ctx context.Context) {
	h.rereadWatches(ctx)
	h.ctrl.Wake()
	h.ctrl.AdoptView(ctx)
	h.reloadAdminToken(ctx) // a rotation may be among the missed notifications
}

// tookOver runs when this replica takes the controller lease from another. A holder that died
// may have stored desired states whose notifications were still in its outbox: every replica
// (this one now, the others through a resync notification) has its watch streams re-read
// their desired states, so that no agent is left on a revision the store no longer assigns.
func (h *Hub) tookOver(ctx context.Context) {
	h.log.Info("took the controller lease: every replica's watches re-read their desired states")
	h.rereadWatches(ctx)
	h.repl.Publish(replica.Event{Kind: replica.EventResync})
}

// rereadWatches has every watch stream here re-read its desired state, and ends those of
// clusters that are gone; certificates are checked against the store again.
func (h *Hub) rereadWatches(ctx context.Context) {
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
}

// IsLeader reports whether this replica holds the controller lease (always, for a single hub).
func (h *Hub) IsLeader() bool { return h.repl.Lease().Held() }

// ReplicaID names this replica.
func (h *Hub) ReplicaID() string { return h.repl.ID() }

// RotateAdminToken makes a new bootstrap admin token for the replicas sharing st and returns
// it: the store keeps its hash, and the running replicas take that at once, so the old token
// stops opening any of them. With dataDir the token is also written to its admin.token (that
// replica's data dir then holds the token itself). A store that cannot be shared (SQLite) is
// refused: its one hub reads admin.token at start.
func RotateAdminToken(ctx context.Context, st store.Store, dataDir string) (string, error) {
	shared, ok := st.(replica.SharedStore)
	if !ok {
		return "", fmt.Errorf("store %v is a single hub's: stop the hub, delete admin.token in its data dir and start it, and it writes a new one", st)
	}
	tok, err := access.NewSecret()
	if err != nil {
		return "", err
	}
	sum, err := hashAdminToken([]byte(tok))
	if err != nil {
		return "", err
	}
	if dataDir != "" {
		// Before the store: a replica on this data dir that takes the new hash finds its token.
		path := filepath.Join(dataDir, AdminTokenFile)
		if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("write the new admin token: %w", err)
		}
	}
	if err := replica.ReplaceShared(ctx, shared, "rotate-admin-token", AdminTokenFile, sum); err != nil {
		return tok, err
	}
	return tok, nil
}
