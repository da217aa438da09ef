package agent

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
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

// gatesOf converts a desired state's gates. A gate that fails window.Check stays in the set:
// window.Evaluate holds back everything it may cover (fail closed); it is logged here, once
// per desired state.
func (a *Agent) gatesOf(ds *agentv1.DesiredState) gateSet {
	if n := len(ds.GetGates()); n > maxGates {
		err := fmt.Errorf("desired state generation %d carries %d gates, more than %d; everything is held back", ds.GetGeneration(), n, maxGates)
		a.log.Error("gates not read", "error", err)
		return gateSet{err: err}
	}
	var gs gateSet
	for _, g := range ds.GetGates() {
		wg := gateFromProto(g)
		if err := window.Check(wg); err != nil {
			a.log.Error("gate not valid: it holds back everything it may cover until the hub sends a valid one",
				"generation", ds.GetGeneration(), "gate", g.GetName(), "error", err)
		}
		gs.gates = append(gs.gates, wg)
	}
	return gs
}

func gateFromProto(g *agentv1.Gate) window.Gate {
	// A duration beyond what Check takes is kept beyond it (not wrapped round by the
	// conversion), so that Check refuses it.
	d := window.MaxDuration + time.Second
	if s := g.GetDurationSeconds(); s >= 0 && s <= int64(window.MaxDuration/time.Second) {
		d = time.Duration(s) * time.Second
	} else if s < 0 {
		d = -time.Second
	}
	return window.Gate{
		Name: g.GetName(), Kind: g.GetKind(), Type: g.GetType(), Schedule: g.GetSchedule(),
		Duration: d, TimeZone: g.GetTimeZone(), Releases: g.GetReleases(), Blocks: g.GetBlocks(),
		Reason: g.GetReason(), Actor: g.GetActor(),
	}
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
	sync *agentv1.SyncRequest
}

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
// variables, namespace, Helm settings (values), decryption. This is what a gate on revisions holds back. The other settings
// (prune, selfHeal, wait, timeouts, the project's rules, ignore rules, dependsOn) take effect
// at once, also while a window or freeze holds a new revision: they say how to reconcile, not
// what, and an operator may need to change them during a freeze (turn self-heal off in an
// incident).
func sameContent(a, b *agentv1.Assignment) bool {
	if a.GetRevision() != b.GetRevision() || a.GetDigest() != b.GetDigest() || a.GetPath() != b.GetPath() ||
		a.GetNamespace() != b.GetNamespace() || a.GetSource() != b.GetSource() || a.GetUrl() != b.GetUrl() ||
		len(a.GetVars()) != len(b.GetVars()) || a.GetDecryption() != b.GetDecryption() || !proto.Equal(a.GetHelm(), b.GetHelm()) {
		return false
	}
	for k, v := range a.GetVars() {
		if w, ok := b.GetVars()[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// withContent is desired with the content (see sameContent) of inForce.
func withContent(desired, inForce *agentv1.Assignment) *agentv1.Assignment {
	out := cloneAssignment(desired)
	out.Revision, out.Digest, out.Path = inForce.GetRevision(), inForce.GetDigest(), inForce.GetPath()
	out.Namespace, out.Source, out.Url, out.Vars = inForce.GetNamespace(), inForce.GetSource(), inForce.GetUrl(), inForce.GetVars()
	out.Decryption = inForce.GetDecryption()
	if h := inForce.GetHelm(); h != nil {
		out.Helm = proto.Clone(h).(*agentv1.HelmRelease)
	} else {
		out.Helm = nil
	}
	return out
}

func cloneAssignment(as *agentv1.Assignment) *agentv1.Assignment {
	return proto.Clone(as).(*agentv1.Assignment)
}
