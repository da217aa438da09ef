// Package rollout is the pure rollout planner: given a release's rollout, its clusters, their
// agents' reports and the time, it decides which cluster gets which artifact digest, and how
// the rollout's state moves (waves, bake, failures, halt, rollback, approvals). It does no I/O;
// the hub's controller stores its State as a record (kind RecordKind, key the release) and
// feeds it. Its scenarios are data-driven tests under testdata/.
package rollout

import (
	"errors"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubapi"
)

// RecordKind is the store record kind of rollout states; the key is the release name.
const RecordKind = "rollout"

// Actions users take on a rollout.
const (
	ActionPause    = "pause"
	ActionResume   = "resume"
	ActionApprove  = "approve"
	ActionAbort    = "abort"
	ActionRollback = "rollback"
)

// ErrAction is wrapped by Act's errors that are the caller's (an unknown action, nothing to
// approve): the user API answers them with 409.
var ErrAction = errors.New("rollout action refused")

// State is a release's rollout as the store keeps it (JSON).
type State struct {
	// (fields are the planner's; see state.go)
}

// Act applies a user's action (ActionPause...) to st, by actor at now, and returns the
// event to audit and notify. wave names the wave to approve ("" the one waiting).
func Act(st *State, action, wave, actor string, now time.Time) (hubapi.RolloutEvent, error) {
	return hubapi.RolloutEvent{}, errors.New("rollout.Act: not implemented yet")
}

// View is st as the user API shows it, for spec (the release's rollout; nil when the release
// has none any more).
func View(release string, spec *v1alpha1.Rollout, st *State) hubapi.RolloutView {
	return hubapi.RolloutView{Release: release, Phase: "Idle"}
}
