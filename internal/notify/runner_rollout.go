package notify

import (
	"slices"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// maxPendingRollouts bounds the rollout events waiting for the next evaluation; beyond it
// the oldest go (the audit trail keeps them all).
const maxPendingRollouts = 256

// Rollout queues a rollout event (the controller's) for the next evaluation of the
// notifications.
func (r *Runner) Rollout(release string, e phase.RolloutEvent) {
	if r == nil {
		return
	}
	r.rolloutMu.Lock()
	defer r.rolloutMu.Unlock()
	r.rollouts = append(r.rollouts, Event{
		Type: Rollout, Release: release, Cluster: e.Cluster, Time: e.At,
		RolloutEvent: e.Type, Wave: e.Wave, Message: e.Message, Actor: e.Actor,
	})
	if k := len(r.rollouts) - maxPendingRollouts; k > 0 {
		r.rollouts = slices.Delete(r.rollouts, 0, k)
	}
}

// takeRollouts returns the rollout events queued and forgets them.
func (r *Runner) takeRollouts() []Event {
	r.rolloutMu.Lock()
	defer r.rolloutMu.Unlock()
	out := r.rollouts
	r.rollouts = nil
	return out
}

// rolloutsFor are the rollout events notification nt listens to: it names the rollout event
// (or lists no events) and selects the release. Its cluster selector does not apply: a
// rollout concerns the release across clusters.
func rolloutsFor(nt v1alpha1.Notification, events []Event) []Event {
	if len(nt.Spec.Events) > 0 && !slices.Contains(nt.Spec.Events, Rollout) {
		return nil
	}
	var out []Event
	for _, e := range events {
		if len(nt.Spec.Releases) == 0 || slices.Contains(nt.Spec.Releases, e.Release) {
			out = append(out, e)
		}
	}
	return out
}
