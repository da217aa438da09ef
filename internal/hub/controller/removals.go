package controller

import (
	"context"
	"sync"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
)

// relabels remembers who changed a cluster's labels since the last reschedule, so that a
// release the change removes from the cluster is attributed to them. It is memory only: after
// a restart, or when another replica took the request, the removal is attributed to the
// fleet revision alone.
type relabels struct {
	mu sync.Mutex
	by map[string]string // cluster -> actor
}

func (r *relabels) note(cluster, actor string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]string{}
	}
	r.by[cluster] = actor
}

// take returns what was noted and forgets it.
func (r *relabels) take() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := r.by
	r.by = nil
	return by
}

// Relabelled tells the controller that actor changed cluster's labels, and reschedules.
func (c *Controller) Relabelled(cluster, actor string) {
	c.relabels.note(cluster, actor)
	c.Wake()
}

// attributeRemovals completes the tombstones this reschedule adds to a cluster's document
// (releases prev assigned and doc does not) with who caused them, and returns them.
func attributeRemovals(prev, doc desired.Document, actor string) []desired.Tombstone {
	held := make(map[string]bool, len(prev.Assignments))
	for _, a := range prev.Assignments {
		held[a.Release] = true
	}
	var added []desired.Tombstone
	for i := range doc.Removed {
		t := &doc.Removed[i]
		if !held[t.Release] {
			continue // an older tombstone, already attributed and audited
		}
		if t.Reason == desired.ReasonNotSelected && t.Actor == "" {
			// A tombstone a rollout held back already names who relabelled the cluster
			// then; a later relabel is not its cause.
			t.Actor = actor
		}
		added = append(added, *t)
	}
	return added
}

// auditRemovals records each release that left a cluster once its document is stored. The
// cluster's agent prunes it when it next reads its desired state, and reports what it pruned.
func (c *Controller) auditRemovals(ctx context.Context, cluster string, removed []desired.Tombstone) {
	for _, t := range removed {
		actor := t.Actor
		if actor == "" {
			actor = "hub"
		}
		detail := map[string]any{"reason": t.Reason, "fleetRevision": t.FleetRevision, "revision": t.Revision, "digest": t.Digest}
		c.d.Record(ctx, audit.Event{Actor: actor, Action: "assignment.removed", Cluster: cluster, Release: t.Release, Detail: detail})
	}
}
