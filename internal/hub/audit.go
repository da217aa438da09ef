package hub

import (
	"context"

	"github.com/flotilla/flotilla/internal/audit"
)

// record appends e to the audit log. It never fails the caller: a record that cannot be
// written is logged as an error. The append outlives the request's context, so a client that
// hangs up does not lose the record of what it did.
func (h *Hub) record(ctx context.Context, e audit.Event) {
	if h.audit == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = h.clock.Now()
	}
	if h.repl != nil {
		h.repl.TagEvent(&e)
	}
	if _, err := h.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		h.log.Error("audit record not written", "action", e.Action, "cluster", e.Cluster, "release", e.Release, "error", err)
	}
}
