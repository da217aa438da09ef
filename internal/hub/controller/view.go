package controller

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// What the user API and dashboard show of the fleet configuration (its releases, the
// scheduling problems) comes from the controller, which only the lease holder runs. So that
// every replica answers alike, the holder stores that view in the shared store after each
// reschedule and tells the others, which adopt it; they never read the fleet repository. The
// view also lists the artifacts in use, so that the others drop the rest from their caches.

// ViewFile names the stored view among the shared files.
const ViewFile = "fleet-view.json"

type sharedView struct {
	Revision string          `json:"revision"`
	Fleet    *v1alpha1.Fleet `json:"fleet"`
	// Main is the main fleet alone, when Fleet has tenants' configurations added: the
	// replica that takes the lease next checks the tenants against it.
	Main     *v1alpha1.Fleet    `json:"main,omitempty"`
	Problems []schedule.Problem `json:"problems"`
	// RejectedCommit is View.RejectedCommit.
	RejectedCommit string `json:"rejectedCommit,omitempty"`
	// Artifacts are the digests the holder keeps: desired states refer to them, or a poll
	// just packed them.
	Artifacts []string `json:"artifacts"`
}

// shareView stores the lease holder's view, with the artifacts it keeps, and tells the other
// replicas.
func (c *Controller) shareView(ctx context.Context, keep map[string]bool) {
	sh := c.d.Shared
	if sh == nil {
		return
	}
	c.mu.Lock()
	var main *v1alpha1.Fleet
	if sched := c.scheduledLocked(); sched != c.fleet {
		main = c.fleet
	}
	data, err := json.Marshal(sharedView{Revision: c.fleetRev, Fleet: c.scheduledLocked(), Main: main, Problems: c.problems, RejectedCommit: c.rejectedCommit, Artifacts: slices.Sorted(maps.Keys(keep))})
	c.mu.Unlock()
	if err != nil {
		c.log.Error("encode the fleet view for the other replicas", "error", err)
		return
	}
	if err := sh.PutSharedFile(ctx, ViewFile, data); err != nil {
		c.log.Warn("fleet view not shared with the other replicas", "error", err)
		return
	}
	c.d.PublishView()
}

// AdoptView takes the lease holder's view, on a replica that does not hold the lease, and
// drops from the local artifact cache what the holder no longer keeps. An artifact dropped
// while a download of it is under way still reaches that agent (the open file outlives its
// name); a later download fetches it again.
func (c *Controller) AdoptView(ctx context.Context) {
	sh := c.d.Shared
	if sh == nil || c.d.Lease.Held() {
		return
	}
	files, err := sh.SharedFiles(ctx, []string{ViewFile})
	if err != nil {
		c.log.Warn("fleet view of the lease holder not read", "error", err)
		return
	}
	data, ok := files[ViewFile]
	if !ok {
		return // no lease holder has scheduled yet
	}
	var v sharedView
	if err := json.Unmarshal(data, &v); err != nil {
		c.log.Warn("fleet view of the lease holder does not parse", "error", err)
		return
	}
	c.mu.Lock()
	if c.d.Lease.Held() {
		c.mu.Unlock()
		return // took the lease meanwhile: its own view wins
	}
	c.fleet, c.fleetRev, c.problems, c.rejectedCommit = v.Fleet, v.Revision, v.Problems, v.RejectedCommit
	c.merged, c.mergedFrom = nil, nil
	if v.Main != nil {
		c.fleet, c.merged, c.mergedFrom = v.Main, v.Fleet, v.Main
	}
	c.mu.Unlock()
	keep := make(map[string]bool, len(v.Artifacts))
	for _, d := range v.Artifacts {
		keep[d] = true
	}
	if removed, err := c.d.Artifacts.GC(keep); err != nil {
		c.log.Warn("artifact cache garbage collection", "error", err)
	} else if len(removed) > 0 {
		c.log.Info("artifacts dropped from the cache", "removed", len(removed))
	}
}
