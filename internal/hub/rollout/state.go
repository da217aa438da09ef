package rollout

import (
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Artifact is one artifact of the release's source: what an assignment carries.
type Artifact struct {
	Digest   string `json:"digest,omitempty"`
	Revision string `json:"revision,omitempty"`
	URL      string `json:"url,omitempty"`
}

// State is a release's rollout as the store keeps it (JSON). The zero value is a release
// that never rolled out.
type State struct {
	// Phase is one of the Phase constants; "" before the first rollout (Idle).
	Phase string `json:"phase,omitempty"`
	// Paused stops new cluster starts (Progressing or WaitingApproval).
	Paused bool `json:"paused,omitempty"`
	// Message says what the rollout waits for or why it stopped.
	Message string `json:"message,omitempty"`
	// Current is the artifact this rollout is pinned to; Stable the last one that completed
	// (what rollback restores); Queued a newer one waiting behind this rollout.
	Current Artifact `json:"current,omitzero"`
	Stable  Artifact `json:"stable,omitzero"`
	Queued  Artifact `json:"queued,omitzero"`
	// Spec is the rollout of the release as last seen: a deleted release's removal goes
	// out wave by wave along it.
	Spec *v1alpha1.Rollout `json:"spec,omitempty"`
	// Waves are the waves of this rollout, in the order of Spec.Waves.
	Waves []WaveState `json:"waves,omitempty"`
	// Clusters are the clusters this rollout started, or passed over, by name.
	Clusters  map[string]*ClusterState `json:"clusters,omitempty"`
	StartedAt time.Time                `json:"startedAt,omitzero"`
	UpdatedAt time.Time                `json:"updatedAt,omitzero"`
	// Events are the newest events, at most MaxEvents, oldest first.
	Events []phase.RolloutEvent `json:"events,omitempty"`
	// Removing is set while a deleted release leaves its clusters wave by wave.
	Removing bool `json:"removing,omitempty"`
	// Project is the release's project as last seen: who may view a deleted release's
	// removal.
	Project string `json:"project,omitempty"`
	// Leaving is the removal, wave by wave, from the clusters the release (still in the
	// fleet, with its rollout) no longer selects; nil when none is under way.
	Leaving *Leaving `json:"leaving,omitempty"`
	// Placed is the wave ("" none) of each cluster the release selected at the last step:
	// a cluster that stops matching leaves in the wave its labels matched before the
	// change.
	Placed map[string]string `json:"placed,omitempty"`
}

// WaveState is where one wave stands.
type WaveState struct {
	Name       string    `json:"name"`
	Started    bool      `json:"started,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	Done       bool      `json:"done,omitempty"`
	ApprovedBy string    `json:"approvedBy,omitempty"`
}

// ClusterState is one cluster in a rollout.
type ClusterState struct {
	Wave string `json:"wave"`
	// Phase is one of the Cluster* constants.
	Phase string `json:"phase"`
	// Since is when the cluster got the pinned artifact, moved forward by the time it was
	// held by a gate: the progress deadline counts from it.
	Since time.Time `json:"since,omitzero"`
	// ReadySince is when it was last seen Ready at the pinned digest without a break.
	ReadySince time.Time `json:"readySince,omitzero"`
	Message    string    `json:"message,omitempty"`
	// Failed: the cluster failed at the pinned artifact (it may have been rolled back
	// since); it counts against its wave's maxFailures.
	Failed bool `json:"failed,omitempty"`
	// Held: pending because a gate blocks new revisions on the cluster.
	Held bool `json:"held,omitempty"`
	// HeldSince is when a gate (or, with unreachable: wait, the agent's absence) began to
	// hold the cluster back after it started; zero when nothing does.
	HeldSince time.Time `json:"heldSince,omitzero"`
}

// Phase returns the phase users see: Idle for a release that never rolled out, Paused
// for a paused rollout.
func (st *State) viewPhase() string {
	if lv := st.Leaving; lv != nil && !st.running() && st.Phase != PhaseHalted {
		// Only the removal from clusters no longer selected is under way: it is what moves.
		switch {
		case lv.Paused:
			return PhasePaused
		case lv.WaitsApproval != "":
			return PhaseWaitingApproval
		}
		return PhaseProgressing
	}
	return st.rolloutPhase()
}

// running reports whether the rollout itself moves (Progressing or WaitingApproval).
func (st *State) running() bool {
	return st.Phase == PhaseProgressing || st.Phase == PhaseWaitingApproval
}

// rolloutPhase is the rollout's phase as users see it, apart from a removal under way.
func (st *State) rolloutPhase() string {
	switch {
	case st.Phase == "":
		return PhaseIdle
	case st.Paused && (st.Phase == PhaseProgressing || st.Phase == PhaseWaitingApproval):
		return PhasePaused
	}
	return st.Phase
}

// event records e in st (bounded) and returns it.
func (st *State) event(now time.Time, typ, wave, cluster, msg string) phase.RolloutEvent {
	e := phase.RolloutEvent{At: now, Type: typ, Wave: wave, Cluster: cluster, Message: msg}
	st.Events = append(st.Events, e)
	if n := len(st.Events) - MaxEvents; n > 0 {
		st.Events = append(st.Events[:0:0], st.Events[n:]...)
	}
	return e
}

// wave returns the state of the wave named name, or nil.
func (st *State) wave(name string) *WaveState {
	for i := range st.Waves {
		if st.Waves[i].Name == name {
			return &st.Waves[i]
		}
	}
	return nil
}

// syncWaves makes st.Waves follow spec's waves by name: a wave edited in the middle of a
// rollout keeps what it had reached, a new one starts pending.
func (st *State) syncWaves(spec *v1alpha1.Rollout) {
	if spec == nil {
		return
	}
	st.Waves = syncWaveStates(st.Waves, spec)
}

// syncWaveStates returns the states of spec's waves, taken from old by name.
func syncWaveStates(old []WaveState, spec *v1alpha1.Rollout) []WaveState {
	out := make([]WaveState, len(spec.Waves))
	for i, w := range spec.Waves {
		out[i] = WaveState{Name: w.Name}
		for _, o := range old {
			if o.Name == w.Name {
				out[i] = o
				break
			}
		}
	}
	return out
}
