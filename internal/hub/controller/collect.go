package controller

import "context"

// collect deletes the artifacts, local and shared, that neither keep nor the controller's
// state at this moment refers to. keep was taken when reschedule began; a poll may have packed
// a new artifact since (it is in fresh, or its result already in artifacts), so that state is
// read again, under c.mu, and c.mu is held while deleting: a pack cannot start and finish
// unseen in between. With a pack under way it collects nothing (the next reschedule will).
func (c *Controller) collect(ctx context.Context, keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freshPending > 0 {
		return
	}
	for d := range c.fresh {
		keep[d] = true
	}
	for _, a := range c.artifacts {
		keep[a.Digest] = true
	}
	if removed, err := c.d.Artifacts.GC(keep); err != nil {
		c.log.Warn("artifact garbage collection", "error", err)
	} else if len(removed) > 0 {
		c.log.Info("artifacts garbage-collected", "removed", len(removed))
	}
	if sh := c.d.Shared; sh != nil {
		if n, err := sh.DeleteArtifactsExcept(ctx, keep); err != nil {
			c.log.Warn("shared artifact garbage collection", "error", err)
		} else if n > 0 {
			c.log.Info("shared artifacts garbage-collected", "removed", n)
		}
	}
}
