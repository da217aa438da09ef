package agent

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
)

// Target is what an agent reconciles assignments into. In production it is the cluster's
// API server through a *reconcile.Reconciler; the fleet simulator gives agents an in-memory
// cluster instead, so that hundreds of real agents fit in one process.
type Target interface {
	// Reconcile makes the target hold objects for the assignment opts.Name, with the
	// semantics of reconcile.Reconciler.Reconcile: the result lists every object's action
	// (created, configured, unchanged, pruned ...) and is never nil, even with an error.
	Reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts reconcile.Options) (*reconcile.Result, error)
	// Remove deletes what the assignment name applied, as when its release left the
	// cluster; removing an assignment the target does not know does nothing.
	Remove(ctx context.Context, name string) (*reconcile.Result, error)
	// Inventories names every assignment the target holds objects for, read from the target
	// itself (not the agent's disk), so that leftovers are found after the state dir is lost.
	Inventories(ctx context.Context) ([]string, error)
}

// The reconciler is the production target.
var _ Target = (*reconcile.Reconciler)(nil)
