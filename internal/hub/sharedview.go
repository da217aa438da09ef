package hub

import (
	"context"
	"encoding/json"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// What the user API and dashboard show of the fleet configuration (its releases, the
// scheduling problems) comes from the controller, which only the lease holder runs. So that
// every replica answers alike, the holder stores that view in the shared store after each
// reschedule and tells the others, which adopt it; they never read the fleet repository.

// sharedViewFile names the stored view among the shared files.
const sharedViewFile = "fleet-view.json"

type sharedView struct {
	Revision string             `json:"revision"`
	Fleet    *v1alpha1.Fleet    `json:"fleet"`
	Problems []schedule.Problem `json:"problems"`
}

// shareView stores the lease holder's view and tells the other replicas.
func (c *controller) shareView(ctx context.Context) {
	sh, f := c.h.repl.shared, c.h.repl.fanout
	if sh == nil || f == nil {
		return
	}
	c.mu.Lock()
	data, err := json.Marshal(sharedView{Revision: c.fleetRev, Fleet: c.fleet, Problems: c.problems})
	c.mu.Unlock()
	if err != nil {
		c.h.log.Error("encode the fleet view for the other replicas", "error", err)
		return
	}
	if err := sh.PutSharedFile(ctx, sharedViewFile, data); err != nil {
		c.h.log.Warn("fleet view not shared with the other replicas", "error", err)
		return
	}
	f.publish(eventView, "")
}

// adoptView takes the lease holder's view, on a replica that does not hold the lease.
func (c *controller) adoptView(ctx context.Context) {
	sh := c.h.repl.shared
	if sh == nil || c.h.repl.lease.Held() {
		return
	}
	files, err := sh.SharedFiles(ctx, []string{sharedViewFile})
	if err != nil {
		c.h.log.Warn("fleet view of the lease holder not read", "error", err)
		return
	}
	data, ok := files[sharedViewFile]
	if !ok {
		return // no lease holder has scheduled yet
	}
	var v sharedView
	if err := json.Unmarshal(data, &v); err != nil {
		c.h.log.Warn("fleet view of the lease holder does not parse", "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h.repl.lease.Held() {
		return // took the lease meanwhile: its own view wins
	}
	c.fleet, c.fleetRev, c.problems = v.Fleet, v.Revision, v.Problems
}
