// Package window decides whether windows, freezes and suspensions hold back a release's
// changes at an instant. It is pure and shared: the agent checks the gates it received
// against its own clock (so they hold while the hub is unreachable), and the hub's rollout
// planner checks the same gates before it starts a cluster.
package window

import "time"

// Gate holds back some changes of some releases while it is closed: a window (deny: while
// open; allow: whenever no allow window is open), a freeze or a suspension (always closed).
type Gate struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"` // KindWindow, KindFreeze, KindSuspend
	Type     string        `json:"type"` // "allow" or "deny"
	Schedule string        `json:"schedule,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	TimeZone string        `json:"timeZone,omitempty"`
	// Releases are names or globs ("team-a-*"); empty: every release.
	Releases []string `json:"releases,omitempty"`
	// Blocks: BlockRevisions, BlockPrune, BlockSelfHeal; empty: revisions only.
	Blocks []string `json:"blocks,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Actor  string   `json:"actor,omitempty"`
}

// Kinds of gates.
const (
	KindWindow  = "window"
	KindFreeze  = "freeze"
	KindSuspend = "suspend"
)

// What a gate may block (the values of v1alpha1.WindowSpec.Blocks).
const (
	BlockRevisions = "revisions"
	BlockPrune     = "prune"
	BlockSelfHeal  = "selfHeal"
)

// Verdict is what the gates hold back for one release at one instant.
type Verdict struct {
	Revisions, Prune, SelfHeal bool
	// Reason says why, for status: `window "business-hours" opens 22:00 Europe/Berlin`,
	// `frozen by token:admin: incident 4711`, `cluster suspended`; "" when nothing is held.
	Reason string
	// Next is the next instant at which the verdict may change by time alone (a window
	// opens or closes); zero when no window is involved.
	Next time.Time
}

// Blocked reports whether anything is held back.
func (v Verdict) Blocked() bool { return v.Revisions || v.Prune || v.SelfHeal }

// Evaluate returns what gates hold back for release at now.
func Evaluate(gates []Gate, release string, now time.Time) Verdict {
	panic("window.Evaluate: not implemented yet")
}

// Check returns an error naming the field when g's schedule, time zone, type, kind or blocks
// are not valid; the fleet's validation and the agent (for a gate from a newer hub) use it.
func Check(g Gate) error {
	panic("window.Check: not implemented yet")
}
