package agent

import (
	"github.com/flotilla/flotilla/internal/desired"
)

// Bounds on the sync requests of one desired state (flotilla sync): the hub sends a handful;
// anything beyond is input to refuse, not to act on.
const (
	maxSyncID        = 128
	maxSyncsPerState = 100
)

// syncPass is what one lane's pass (lanes.go) does about sync requests.
type syncPass struct {
	// byRelease is the request each release answers in this pass: at most one, so that each
	// request's id reaches the hub in a status of its own.
	byRelease map[string]*desired.SyncRequest
	// done are the ids of requests for one release answered in this pass, remembered once
	// the pass is over.
	done []string
	// every are the ids of requests for every release that this pass answers for its
	// project; such a request is done once every project's lane has answered it.
	every []string
}

// pendingSyncs are the sync requests of ds the agent has not acted on yet (neither in the
// state dir nor in handled), in order, each id once: each makes its release (or every
// release) reconcile in the next pass of its lane, due or not. Requests beyond the bounds
// are refused here, not acted on.
func (a *Agent) pendingSyncs(ds *desired.State, handled map[string]bool) []*desired.SyncRequest {
	var out []*desired.SyncRequest
	seen := map[string]bool{}
	for i := range ds.Syncs {
		if i == maxSyncsPerState {
			a.log.Warn("desired state carries more sync requests than the agent acts on; the rest are ignored",
				"generation", ds.Generation, "syncs", len(ds.Syncs), "max", maxSyncsPerState)
			break
		}
		r := &ds.Syncs[i]
		id := r.ID
		if id == "" || len(id) > maxSyncID {
			a.log.Warn("sync request ignored: its id is empty or longer than the bound", "length", len(id), "max", maxSyncID)
			continue
		}
		if seen[id] || handled[id] || a.st.syncHandled(id) {
			continue
		}
		seen[id] = true
		out = append(out, r)
	}
	return out
}

// takeSyncs picks, from the pending requests, what one pass of g's lane answers: each
// release at most one request for itself; a request for every release only in a pass that
// answers no other, so that every release of the project reports its id, and only once per
// project (answered). A request for another project's release is that lane's; one for a
// release not assigned here is settled by the loop (lanes.settleSyncs).
func takeSyncs(pending []*desired.SyncRequest, g laneGroup, answered map[string]map[string]bool) syncPass {
	p := syncPass{byRelease: map[string]*desired.SyncRequest{}}
	in := make(map[string]bool, len(g.releases))
	for _, as := range g.releases {
		in[as.Release] = true
	}
	for _, r := range pending {
		if rel := r.Release; rel != "" {
			if in[rel] && p.byRelease[rel] == nil { // else another lane's, or a later pass's
				p.byRelease[rel] = r
				p.done = append(p.done, r.ID)
			}
			continue
		}
		if answered[r.ID][g.project] || len(p.byRelease) > 0 {
			continue
		}
		for rel := range in {
			p.byRelease[rel] = r
		}
		p.every = append(p.every, r.ID)
	}
	return p
}
