package agent

import (
	"slices"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Bounds on the sync requests of one desired state (flotilla sync): the hub sends a handful;
// anything beyond is input to refuse, not to act on.
const (
	maxSyncID        = 128
	maxSyncsPerState = 100
)

// syncPass is what one pass of the reconcile loop does about sync requests.
type syncPass struct {
	// byRelease is the request each release answers in this pass: at most one, so that each
	// request's id reaches the hub in a status of its own.
	byRelease map[string]*agentv1.SyncRequest
	// done are the ids acted on (or ignored) in this pass, remembered once the pass is over.
	done []string
	// more says requests remain for another pass right after this one.
	more bool
}

// takeSyncs picks the sync requests of ds the agent has not acted on yet: each makes its
// release (or every release) reconcile in this pass, due or not. A request for a release not
// assigned here is ignored (and remembered, so it is not looked at again).
func (a *Agent) takeSyncs(ds *agentv1.DesiredState, assigned map[string]*agentv1.Assignment) syncPass {
	var p syncPass
	for i, r := range ds.GetSyncs() {
		if i == maxSyncsPerState {
			a.log.Warn("desired state carries more sync requests than the agent acts on; the rest are ignored",
				"generation", ds.GetGeneration(), "syncs", len(ds.GetSyncs()), "max", maxSyncsPerState)
			break
		}
		id := r.GetId()
		if id == "" || len(id) > maxSyncID {
			a.log.Warn("sync request ignored: its id is empty or longer than the bound", "length", len(id), "max", maxSyncID)
			continue
		}
		if a.st.syncHandled(id) || slices.Contains(p.done, id) {
			continue
		}
		if p.byRelease == nil {
			p.byRelease = map[string]*agentv1.SyncRequest{}
		}
		if rel := r.GetRelease(); rel != "" {
			switch {
			case assigned[rel] == nil:
				a.log.Info("sync request for a release not assigned to this cluster; ignored", "id", id, "release", rel, "actor", r.GetActor())
				p.done = append(p.done, id)
			case p.byRelease[rel] != nil:
				p.more = true // the next pass answers it
			default:
				p.byRelease[rel] = r
				p.done = append(p.done, id)
			}
			continue
		}
		// Every release: taken only by a pass that answers no other request, so that every
		// release reports this id.
		if len(p.byRelease) > 0 {
			p.more = true
			continue
		}
		for rel := range assigned {
			p.byRelease[rel] = r
		}
		p.done = append(p.done, id)
		if len(assigned) == 0 {
			a.log.Info("sync request for every release of a cluster that has none; ignored", "id", id, "actor", r.GetActor())
		}
	}
	return p
}

// finishSyncs remembers the requests acted on in the pass, and says whether another pass
// should follow at once for the requests left (not when remembering failed: the next pass
// would take the same requests again, and so on).
func (a *Agent) finishSyncs(p syncPass) (again bool) {
	if err := a.st.markSyncsHandled(p.done); err != nil {
		a.log.Error("remember sync requests acted on; they may be acted on again", "error", err)
		return false
	}
	return p.more
}
