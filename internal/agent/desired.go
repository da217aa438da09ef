package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// RefusedError is why the agent refused a desired state: it drops releases the agent runs
// without a tombstone for them, or it could not be read at all (Malformed). The agent keeps running the last document it accepted and
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
	// Malformed is why the document could not be read (Helm values that are not JSON): it is
	// refused as a whole, since running the part that reads would drop the rest.
	Malformed error
}

func (e *RefusedError) Unwrap() error { return e.Malformed }

func (e *RefusedError) Error() string {
	if e.Malformed != nil {
		return fmt.Sprintf("desired state generation %d cannot be read; refused, nothing applied or pruned: %v", e.Generation, e.Malformed)
	}
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
func checkRemovals(accepted *desired.State, next desired.State) *RefusedError {
	if accepted == nil {
		return nil
	}
	kept := map[string]bool{}
	for _, as := range next.Assignments {
		kept[as.Release] = true
	}
	for _, t := range next.Removed {
		kept[t.Release] = true
	}
	var dropped []string
	for _, as := range accepted.Assignments {
		if !kept[as.Release] {
			dropped = append(dropped, as.Release)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	return &RefusedError{Generation: next.Generation, Dropped: dropped, OldHub: !next.ExplicitRemovals}
}

// offer is what the agent does with each desired state the hub sends: read it (the one
// conversion of the wire form on the watch stream), then take it on, or refuse it and keep
// running the last accepted one (which stays the one in the state dir, so a restart refuses
// the same document again rather than forgetting the refusal).
func (a *Agent) offer(m *agentv1.DesiredState) {
	ds, err := desired.FromProto(m)
	a.offerMu.Lock()
	defer a.offerMu.Unlock()
	if err != nil {
		a.refuseLocked(&RefusedError{Generation: m.GetGeneration(), Malformed: err})
		return
	}
	a.offerLocked(ds)
}

// offerNewer offers ds only if it is newer than the desired state in force (an imported
// bundle must never take back what the hub sent meanwhile), and returns the generation in
// force when it is not.
func (a *Agent) offerNewer(ds desired.State) (have int64, offered bool) {
	a.offerMu.Lock()
	defer a.offerMu.Unlock()
	if have := generationOf(a.currentDesired()); ds.Generation <= have {
		return have, false
	}
	a.offerLocked(ds)
	return 0, true
}

func (a *Agent) offerLocked(ds desired.State) {
	if refused := checkRemovals(a.currentDesired(), ds); refused != nil {
		a.refuseLocked(refused)
		return
	}
	a.setDesired(ds)
}

// refuseLocked keeps the accepted desired state in force and tells the hub why the newer one
// is not.
func (a *Agent) refuseLocked(refused *RefusedError) {
	a.enqueueMu.Lock()
	a.mu.Lock()
	again := a.refused != nil && a.refused.Generation == refused.Generation // sent again after a reconnect
	a.refused = refused
	a.mu.Unlock()
	if !again {
		a.log.Error("desired state refused", "generation", refused.Generation, "dropped", refused.Dropped, "error", refused)
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
}

// setDesired makes ds the accepted desired state: saved first, then reconciled.
func (a *Agent) setDesired(ds desired.State) {
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
	a.desired = &ds
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

// currentDesired is the accepted desired state, nil before the first; callers must not
// modify it.
func (a *Agent) currentDesired() *desired.State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.desired
}

// generationOf is ds's generation, 0 for none.
func generationOf(ds *desired.State) int64 {
	if ds == nil {
		return 0
	}
	return ds.Generation
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
