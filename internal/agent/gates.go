package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/window"
)

// maxGates bounds the gates of one desired state; a document with more holds everything
// back (fail closed) rather than being read in part.
const maxGates = 1000

// gateSet is a desired state's gates as the agent checks them against its own clock, so that
// they hold while the hub is unreachable.
type gateSet struct {
	gates []window.Gate
	// err, when set, makes every release held back entirely: the gates could not be read.
	err error
}

// gatesOf checks a desired state's gates. A gate that fails window.Check stays in the set:
// window.Evaluate holds back everything it may cover (fail closed); it is logged here, once
// per desired state.
func (a *Agent) gatesOf(ds *desired.State) gateSet {
	if n := len(ds.Gates); n > maxGates {
		err := fmt.Errorf("desired state generation %d carries %d gates, more than %d; everything is held back", ds.Generation, n, maxGates)
		a.log.Error("gates not read", "error", err)
		return gateSet{err: err}
	}
	for _, g := range ds.Gates {
		if err := window.Check(g); err != nil {
			a.log.Error("gate not valid: it holds back everything it may cover until the hub sends a valid one",
				"generation", ds.Generation, "gate", g.Name, "error", err)
		}
	}
	return gateSet{gates: ds.Gates}
}

// verdict is what the gates hold back for release at now.
func (gs gateSet) verdict(release string, now time.Time) window.Verdict {
	if gs.err != nil {
		return window.Verdict{Revisions: true, Prune: true, SelfHeal: true, Reason: gs.err.Error()}
	}
	if len(gs.gates) == 0 {
		return window.Verdict{}
	}
	return window.Evaluate(gs.gates, release, now)
}

// hold is what keeps one reconcile of a release from doing all it would.
type hold struct {
	verdict window.Verdict
	// dependency says which release this one waits for (dependsOn); "" when none.
	dependency string
	// sync is the sync request this reconcile answers; nil when none.
	sync *desired.SyncRequest
}

// syncID is the id of the sync request the reconcile answers, "" for none.
func (h hold) syncID() string {
	if h.sync == nil {
		return ""
	}
	return h.sync.ID
}

// overrides says whether the reconcile answers a sync request that passes the gates.
func (h hold) overrides() bool { return h.sync != nil && h.sync.Override }

// holdsContent reports whether a new revision (new content, see sameContent) is held back.
func (h hold) holdsContent() bool { return h.verdict.Revisions || h.dependency != "" }

// reason is the sentence for AssignmentStatus.waiting.
func (h hold) reason() string {
	var parts []string
	if h.verdict.Revisions && h.verdict.Reason != "" {
		parts = append(parts, h.verdict.Reason)
	}
	if h.dependency != "" {
		parts = append(parts, h.dependency)
	}
	return strings.Join(parts, "; ")
}

// key identifies what the hold changes about a reconcile: when it changes (a window opened,
// a dependency became Ready), the release is reconciled at once.
func (h hold) key() string {
	return fmt.Sprintf("%t/%t/%t/%s", h.verdict.Revisions, h.verdict.Prune, h.verdict.SelfHeal, h.dependency)
}

// sameContent reports whether two assignments apply the same thing: revision, artifact, path,
// variables, namespace, Helm settings (values), decryption. This is what a gate on revisions
// holds back. The other settings (prune, selfHeal, wait, timeouts, the project's rules, ignore
// rules, dependsOn) take effect at once, also while a window or freeze holds a new revision:
// they say how to reconcile, not what, and an operator may need to change them during a
// freeze (turn self-heal off in an incident).
func sameContent(a, b *desired.Assignment) bool {
	return a.Revision == b.Revision && a.Digest == b.Digest && a.Path == b.Path &&
		a.Namespace == b.Namespace && a.Source == b.Source && a.URL == b.URL &&
		a.Decryption == b.Decryption && maps.Equal(a.Vars, b.Vars) && sameHelm(a.Helm, b.Helm)
}

// sameHelm compares Helm settings as they are sent (empty values as none, numbers as
// written): one held in force was read back from the state dir, the other from the hub.
func sameHelm(a, b *desired.Helm) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

// withContent is want with the content (see sameContent) of inForce.
func withContent(want, inForce *desired.Assignment) *desired.Assignment {
	out := *want
	out.Revision, out.Digest, out.Path = inForce.Revision, inForce.Digest, inForce.Path
	out.Namespace, out.Source, out.URL, out.Vars = inForce.Namespace, inForce.Source, inForce.URL, inForce.Vars
	out.Decryption, out.Helm = inForce.Decryption, inForce.Helm
	return &out
}
