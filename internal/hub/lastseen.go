package hub

import (
	"time"

	"github.com/flotilla/flotilla/internal/clock"
)

// reachable reports whether an agent last seen at seen counts as reachable now: heard from
// within Options.UnreachableAfter. A zero seen (never heard from) is not reachable.
func (h *Hub) reachable(seen time.Time) bool {
	return !seen.IsZero() && clock.Since(h.clock, seen) < h.opts.UnreachableAfter
}
