package rollout

import (
	"fmt"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Act applies a user's action (ActionPause...) to st, by actor at now, and returns the
// event to audit and notify. wave names the wave to approve ("" the one waiting). An action
// that does not fit where the rollout stands is refused with an error wrapping ErrAction
// that says why; st is then unchanged.
func Act(st *State, action, wave, actor string, now time.Time) (phase.RolloutEvent, error) {
	refuse := func(format string, args ...any) (phase.RolloutEvent, error) {
		return phase.RolloutEvent{}, fmt.Errorf("%s: %s: %w", action, fmt.Sprintf(format, args...), ErrAction)
	}
	current := st.viewPhase()
	running := st.Phase == PhaseProgressing || st.Phase == PhaseWaitingApproval
	what := "rollout of " + short(st.Current.Revision)
	if st.Removing {
		what = "removal of the deleted release"
	}
	var e phase.RolloutEvent
	if st.Removing && (action == ActionAbort || action == ActionRollback) {
		return refuse("the release was deleted and leaves its clusters wave by wave; to keep it, add it back to the fleet")
	}
	switch action {
	case ActionPause:
		lv := st.Leaving
		if (!running || st.Paused) && (lv == nil || lv.Paused) {
			return refuse("the rollout is %s", current)
		}
		if running {
			st.Paused = true
		}
		if lv != nil {
			lv.Paused = true
			if !running {
				what = "removal from the clusters no longer selected"
			}
		}
		e = st.event(now, EventPaused, "", "", what+" paused: no further cluster starts")
	case ActionResume:
		lv := st.Leaving
		if !st.Paused && (lv == nil || !lv.Paused) {
			return refuse("the rollout is %s, not paused", current)
		}
		if !st.Paused {
			what = "removal from the clusters no longer selected"
		}
		st.Paused = false
		if lv != nil {
			lv.Paused = false
		}
		e = st.event(now, EventResumed, "", "", what+" resumed")
	case ActionApprove:
		// One approval of a wave lets it go for the rollout and for the removal from the
		// clusters no longer selected, whichever waits for it.
		var w, lw *WaveState
		var err error
		if running {
			w, err = approvable(st, wave)
		}
		if lv := st.Leaving; lv != nil && st.Spec != nil && (wave != "" || (w == nil && lv.WaitsApproval != "")) {
			lv.Waves = syncWaveStates(lv.Waves, st.Spec)
			name := wave
			if name == "" {
				name = lv.WaitsApproval
			}
			lw, _ = approvableIn(st.Spec, lv.Waves, name)
		}
		switch {
		case w == nil && lw == nil && !running:
			return refuse("the rollout is %s", current)
		case w == nil && lw == nil:
			return refuse("%s", err)
		}
		name := ""
		for _, ws := range []*WaveState{w, lw} {
			if ws != nil {
				ws.ApprovedBy, name = actor, ws.Name
			}
		}
		msg := "wave " + name + " approved"
		if w == nil {
			msg += " for the removal from the clusters no longer selected"
		}
		e = st.event(now, EventApproved, name, "", msg)
	case ActionAbort:
		if !active(st.Phase) {
			return refuse("the rollout is %s", current)
		}
		st.Phase, st.Paused, st.Queued = PhaseAborted, false, Artifact{}
		st.Message = "aborted by " + actor
		e = st.event(now, EventAborted, "", "", "rollout of "+short(st.Current.Revision)+" aborted: clusters not started keep their revision")
	case ActionRollback:
		if !active(st.Phase) {
			return refuse("the rollout is %s; only a rollout under way or halted can be rolled back", current)
		}
		if st.Stable.Digest == "" {
			return refuse("no revision of the release has completed a rollout yet: nothing to roll back to")
		}
		n := 0
		for _, cs := range st.Clusters {
			if cs.Phase != ClusterPending && cs.Phase != ClusterRolledBack {
				cs.Phase, cs.Message = ClusterRolledBack, "rolled back to "+short(st.Stable.Revision)
				n++
			}
		}
		st.Phase, st.Paused, st.Queued = PhaseRolledBack, false, Artifact{}
		st.Message = "rolled back by " + actor
		e = st.event(now, EventRolledBack, "", "", fmt.Sprintf("rollout of %s rolled back: %d clusters go back to %s",
			short(st.Current.Revision), n, short(st.Stable.Revision)))
	default:
		return refuse("unknown action; use pause, resume, approve, abort or rollback")
	}
	st.Events[len(st.Events)-1].Actor = actor
	e.Actor = actor
	st.UpdatedAt = now
	return e, nil
}

// approvable returns the wave to approve: the one named, or the one waiting for approval.
func approvable(st *State, name string) (*WaveState, error) {
	if st.Spec == nil {
		return nil, fmt.Errorf("the release has no rollout")
	}
	if len(st.Waves) != len(st.Spec.Waves) {
		st.syncWaves(st.Spec)
	}
	return approvableIn(st.Spec, st.Waves, name)
}

// approvableIn returns, among waves (the states of spec's waves), the one to approve.
func approvableIn(spec *v1alpha1.Rollout, waves []WaveState, name string) (*WaveState, error) {
	for i, w := range spec.Waves {
		ws := &waves[i]
		if name != "" && w.Name != name {
			continue
		}
		if name == "" && (ws.Started || w.Approval != v1alpha1.ApprovalRequired || ws.ApprovedBy != "") {
			continue
		}
		switch {
		case w.Approval != v1alpha1.ApprovalRequired:
			return nil, fmt.Errorf("wave %s needs no approval", w.Name)
		case ws.ApprovedBy != "":
			return nil, fmt.Errorf("wave %s was already approved by %s", w.Name, ws.ApprovedBy)
		case ws.Started:
			return nil, fmt.Errorf("wave %s has started", w.Name)
		}
		return ws, nil
	}
	if name != "" {
		return nil, fmt.Errorf("the rollout has no wave %q", name)
	}
	return nil, fmt.Errorf("no wave waits for approval")
}
