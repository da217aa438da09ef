package hub

import (
	"slices"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/notify"
)

// maxPendingRollouts bounds the rollout events waiting for the next evaluation; beyond it
// the oldest go (the audit trail keeps them all).
const maxPendingRollouts = 256

// rollout queues a rollout event (the controller's) for the next evaluation of the
// notifications.
func (n *notifier) rollout(release string, e hubapi.RolloutEvent) {
	if n == nil {
		return
	}
	n.rolloutMu.Lock()
	defer n.rolloutMu.Unlock()
	n.rollouts = append(n.rollouts, notify.Event{
		Type: notify.Rollout, Release: release, Cluster: e.Cluster, Time: e.At,
		RolloutEvent: e.Type, Wave: e.Wave, Message: e.Message, Actor: e.Actor,
	})
	if k := len(n.rollouts) - maxPendingRollouts; k > 0 {
		n.rollouts = slices.Delete(n.rollouts, 0, k)
	}
}

// takeRollouts returns the rollout events queued and forgets them.
func (n *notifier) takeRollouts() []notify.Event {
	n.rolloutMu.Lock()
	defer n.rolloutMu.Unlock()
	out := n.rollouts
	n.rollouts = nil
	return out
}

// rolloutsFor are the rollout events notification nt listens to: it names the rollout event
// (or lists no events) and selects the release. Its cluster selector does not apply: a
// rollout concerns the release across clusters.
func rolloutsFor(nt v1alpha1.Notification, events []notify.Event) []notify.Event {
	if len(nt.Spec.Events) > 0 && !slices.Contains(nt.Spec.Events, notify.Rollout) {
		return nil
	}
	var out []notify.Event
	for _, e := range events {
		if len(nt.Spec.Releases) == 0 || slices.Contains(nt.Spec.Releases, e.Release) {
			out = append(out, e)
		}
	}
	return out
}
