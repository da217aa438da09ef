package agent

import (
	"fmt"
	"slices"
	"strings"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// RefusedError is why the agent refused a desired state: it drops releases the agent runs
// without a tombstone for them. The agent keeps running the last document it accepted and
// prunes nothing; the hub sees the refusal in every heartbeat until a document is accepted.
type RefusedError struct {
	// Generation of the refused document.
	Generation int64
	// Dropped are the releases of the accepted document that the refused one neither assigns
	// nor tombstones, in the accepted document's order.
	Dropped []string
	// OldHub: the document came from a hub older than tombstones (no explicit_removals),
	// which cannot say that a release left on purpose.
	OldHub bool
}

func (e *RefusedError) Error() string {
	what := "release"
	if len(e.Dropped) > 1 {
		what = "releases"
	}
	quoted := make([]string, len(e.Dropped))
	for i, r := range e.Dropped {
		quoted[i] = fmt.Sprintf("%q", r)
	}
	if e.OldHub {
		return fmt.Sprintf("desired state generation %d drops %s %s from a hub that sends no tombstones; upgrade the hub to remove releases; refused, nothing pruned",
			e.Generation, what, strings.Join(quoted, ", "))
	}
	return fmt.Sprintf("desired state generation %d drops %s %s without a tombstone; refused, nothing pruned",
		e.Generation, what, strings.Join(quoted, ", "))
}

// checkRemovals decides whether the agent, running accepted (nil: nothing yet), may take next
// on. It may unless next drops a release of accepted without a tombstone for it: removal is
// explicit, so a document that merely lacks a release (a hub that lost part of its state, a
// bug, a hub older than tombstones) never prunes anything.
func checkRemovals(accepted, next *agentv1.DesiredState) *RefusedError {
	if accepted == nil {
		return nil
	}
	kept := map[string]bool{}
	for _, as := range next.GetAssignments() {
		kept[as.GetRelease()] = true
	}
	for _, t := range next.GetRemoved() {
		kept[t.GetRelease()] = true
	}
	var dropped []string
	for _, as := range accepted.GetAssignments() {
		if !kept[as.GetRelease()] {
			dropped = append(dropped, as.GetRelease())
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	return &RefusedError{Generation: next.GetGeneration(), Dropped: dropped, OldHub: !next.GetExplicitRemovals()}
}

// offer is what the agent does with each desired state the hub sends: take it on, or refuse
// it and keep running the last accepted one (which stays the one in the state dir, so a
// restart refuses the same document again rather than forgetting the refusal).
func (a *Agent) offer(ds *agentv1.DesiredState) {
	a.offerMu.Lock()
	defer a.offerMu.Unlock()
	a.offerLocked(ds)
}

// offerNewer offers ds only if it is newer than the desired state in force (an imported
// bundle must never take back what the hub sent meanwhile), and returns the generation in
// force when it is not.
func (a *Agent) offerNewer(ds *agentv1.DesiredState) (have int64, offered bool) {
	a.offerMu.Lock()
	defer a.offerMu.Unlock()
	if have := a.currentDesired().GetGeneration(); ds.Generation <= have {
		return have, false
	}
	a.offerLocked(ds)
	return 0, true
}

func (a *Agent) offerLocked(ds *agentv1.DesiredState) {
	if refused := checkRemovals(a.currentDesired(), ds); refused != nil {
		a.enqueueMu.Lock()
		a.mu.Lock()
		again := a.refused != nil && a.refused.Generation == refused.Generation // sent again after a reconnect
		a.refused = refused
		a.mu.Unlock()
		if !again {
			a.log.Error("desired state refused", "generation", ds.Generation, "dropped", refused.Dropped, "error", refused)
			a.opts.Metrics.refused(refused.Generation)
		}
		// The hub refuses reports on releases its desired state no longer names: one left at
		// the head of the outbox would hold back every report behind it.
		n, err := a.st.withdraw(refused.Dropped)
		a.enqueueMu.Unlock()
		if err != nil {
			a.log.Error("withdraw reports on dropped releases from the outbox", "error", err)
		} else if n > 0 {
			a.log.Warn("reports on releases the hub dropped withdrawn from the outbox", "statuses", n, "releases", refused.Dropped)
			a.opts.Metrics.setOutbox(a.st.outboxDepth())
		}
		a.heartbeatNow()
		return
	}
	a.setDesired(ds)
}

// setDesired makes ds the accepted desired state: saved first, then reconciled.
func (a *Agent) setDesired(ds *agentv1.DesiredState) {
	if err := a.st.saveDesired(ds); err != nil {
		a.log.Error("cache desired state", "error", err)
	}
	// A project seen for the first time gets its age key now, and the hub its recipient at
	// once, so that its team can encrypt for it before its first encrypted release.
	created, err := a.projectKeys.ensure(ds)
	if err != nil {
		a.log.Error("project age keys", "error", err)
	}
	if created {
		a.heartbeatNow()
	}
	a.mu.Lock()
	a.desired = ds
	a.lastGen = ds.Generation
	wasRefused := a.refused != nil
	a.refused = nil
	a.mu.Unlock()
	a.opts.Metrics.setGeneration(ds.Generation)
	if wasRefused {
		a.log.Info("desired state accepted; the earlier refusal is over", "generation", ds.Generation)
		a.opts.Metrics.refused(0)
		a.heartbeatNow()
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *Agent) currentDesired() *agentv1.DesiredState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.desired
}

// heartbeatNow asks the heartbeat loop to send one without waiting for its interval.
func (a *Agent) heartbeatNow() {
	select {
	case a.beat <- struct{}{}:
	default:
	}
}

// droppedByRefused reports whether the desired state the agent refuses drops release: the
// agent still runs it, but the hub no longer takes reports on it.
func (a *Agent) droppedByRefused(release string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused != nil && slices.Contains(a.refused.Dropped, release)
}
