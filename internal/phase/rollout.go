package phase

import "time"

// RolloutView is where a release's rollout stands: GET /api/v1/rollouts/{release},
// `flotilla rollout status -o json`, the dashboard's lanes. Its JSON field names are a
// documented contract for scripts.
type RolloutView struct {
	Release string `json:"release"`
	// Phase: Idle (nothing rolling out), Progressing, Paused, WaitingApproval, Halted,
	// Completed, Aborted, RolledBack.
	Phase string `json:"phase"`
	// Message says what the rollout waits for or why it stopped.
	Message string `json:"message,omitempty"`
	// Revision and Digest are the artifact being rolled out; Stable* the last one that
	// completed (what rollback restores); Queued* a newer one waiting behind this rollout.
	Revision       string         `json:"revision,omitempty"`
	Digest         string         `json:"digest,omitempty"`
	StableRevision string         `json:"stableRevision,omitempty"`
	StableDigest   string         `json:"stableDigest,omitempty"`
	QueuedRevision string         `json:"queuedRevision,omitempty"`
	QueuedDigest   string         `json:"queuedDigest,omitempty"`
	Paused         bool           `json:"paused"`
	Waves          []WaveView     `json:"waves"`
	Events         []RolloutEvent `json:"events,omitempty"`
	StartedAt      *time.Time     `json:"startedAt,omitempty"`
	UpdatedAt      *time.Time     `json:"updatedAt,omitempty"`
	// Removal: the release was deleted from the fleet and leaves its clusters along the
	// waves of its last rollout (docs/rollouts.md); its waves' phases are the removal's.
	Removal bool `json:"removal,omitempty"`
}

// WaveView is one wave of a rollout.
type WaveView struct {
	Name string `json:"name"`
	// Phase: Pending, WaitingApproval, WaitingWindow, Progressing, Done, Halted.
	Phase         string               `json:"phase"`
	Approval      bool                 `json:"approval,omitempty"` // the wave needs approval
	ApprovedBy    string               `json:"approvedBy,omitempty"`
	MaxConcurrent int                  `json:"maxConcurrent"`
	MaxFailures   int                  `json:"maxFailures"`
	Bake          string               `json:"bake,omitempty"`
	Failures      int                  `json:"failures"`
	Clusters      []RolloutClusterView `json:"clusters"`
}

// RolloutClusterView is one cluster in a wave.
type RolloutClusterView struct {
	Cluster string `json:"cluster"`
	// Phase: Pending, Progressing, Baking, Done, Failed, Skipped, RolledBack.
	Phase    string     `json:"phase"`
	Revision string     `json:"revision,omitempty"` // the revision the rollout assigns it now
	Message  string     `json:"message,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
}

// RolloutEvent is one step of a rollout, as notifications and the audit trail carry it.
type RolloutEvent struct {
	At time.Time `json:"at"`
	// Type: started, wave-started, wave-done, approved, paused, resumed, halted, aborted,
	// rolled-back, completed, superseded.
	Type    string `json:"type"`
	Wave    string `json:"wave,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Message string `json:"message,omitempty"`
}
