// Package phase is the vocabulary of where things stand: an assignment's [Phase], which the
// agent reports in and the hub's views show, and a rollout's views and events ([RolloutView],
// [RolloutEvent]), which the rollout engine makes and the API, the dashboard, notifications
// and the CLI show. It is the domain's, in one place, so that neither the agent nor the
// hub's engines link the user API's client to name a phase.
package phase

// Phase is where an assignment stands. Agents report Pending, Applying, Ready or Failed; the
// hub's views add Progressing and Unreachable.
type Phase string

// Ready means the desired revision is applied (and healthy, for releases with wait: true);
// Unreachable means the cluster's agent has not been heard from within the hub's
// --unreachable-after, whatever it reported last.
const (
	Pending     Phase = "Pending"
	Applying    Phase = "Applying"
	Progressing Phase = "Progressing"
	Ready       Phase = "Ready"
	Failed      Phase = "Failed"
	Unreachable Phase = "Unreachable"
	// Waiting: something holds the release back on the cluster (a window, a freeze, a
	// suspension, a release it depends on); the assignment's view says what.
	Waiting Phase = "Waiting"
	// Removed is never an assignment's phase: an agent reports it once, after removing a
	// release that left its cluster, for the audit trail.
	Removed Phase = "Removed"
)
