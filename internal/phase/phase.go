// Package phase is where an assignment stands, the vocabulary the agent reports in and the
// hub's views and the user-API client show: one place, so that the agent names phases
// without linking the client.
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
