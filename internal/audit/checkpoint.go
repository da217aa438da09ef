package audit

import "time"

// The actions of the records that agents' reports produce.
const (
	// ActionApply is a reconcile that changed something or found something wrong, or the
	// first report of an assignment: a full record of the status.
	ActionApply = "apply"
	// ActionVerified is an assignment's checkpoint: checks that found it unchanged at one
	// revision, from one time to another (see Checkpoint).
	ActionVerified = "apply.verified"
	// ActionRemoved is an assignment the agent pruned from its cluster on its tombstone.
	ActionRemoved = "release.removed"
)

// DefaultCheckpointInterval is how often, at most, an assignment that stays unchanged gets
// an ActionVerified record.
const DefaultCheckpointInterval = time.Hour

// Checkpoint is the "last verified" state of one assignment (a release on a cluster), kept
// beside the chain: the state its last full record stated, and the checks since its last
// record in the chain that found that state unchanged. It is what lets an unchanged check
// cost no record while the chain still proves, interval by interval, that the assignment
// was verified at its revision.
type Checkpoint struct {
	// Revision, Digest, Phase and Health are the state the assignment's last full record
	// stated.
	Revision, Digest, Phase, Health string
	// Since is when that full record was made.
	Since time.Time
	// ChainedAt is when the assignment last got a record in the chain: that full record or
	// its last ActionVerified record.
	ChainedAt time.Time
	// FirstVerified and LastVerified are the first and the last unchanged check since
	// ChainedAt, and Count how many there were (0: none, and both times are zero).
	FirstVerified, LastVerified time.Time
	Count                       int64
}

// Check is what one report says of an assignment, as far as the checkpoint is concerned.
type Check struct {
	// Time is when the hub took the report in, by the hub's clock.
	Time                            time.Time
	Revision, Digest, Phase, Health string
	// Changed says the reconcile changed something or found something wrong: objects
	// created, configured or pruned, drift (healed or not), conflicts, or an error.
	Changed bool
}

// Verdict is what a check puts in the chain.
type Verdict int

const (
	// RecordFull: a full ActionApply record, closing the open Window if it has checks.
	RecordFull Verdict = iota + 1
	// RecordVerified: an ActionVerified record of the Window, which ends with this check.
	RecordVerified
	// RecordNone: nothing; the check joins the checkpoint's open window.
	RecordNone
)

func (v Verdict) String() string {
	switch v {
	case RecordFull:
		return "full"
	case RecordVerified:
		return "verified"
	case RecordNone:
		return "none"
	}
	return "invalid"
}

// Window is a run of unchanged checks of one assignment: the first and last, and how many.
type Window struct {
	From, To time.Time
	Count    int64
}

// Detail is the window as a record's detail holds it.
func (w Window) Detail() map[string]any {
	return map[string]any{"from": w.From.UTC(), "to": w.To.UTC(), "count": w.Count}
}

// window is cp's open window: the unchanged checks not yet in the chain.
func (cp Checkpoint) window() Window {
	return Window{From: cp.FirstVerified, To: cp.LastVerified, Count: cp.Count}
}

// Step decides what check c of an assignment puts in the chain, given the assignment's
// checkpoint cp (ok false: it has none yet) and the checkpoint interval every, and returns
// the checkpoint after c:
//   - RecordFull for the assignment's first check, a check that changed something, and one
//     whose revision, digest, phase or health differ from the checkpoint's. The checkpoint
//     then states c's state, since c.Time, and w is the open window this record closes (its
//     Count is 0 when there is none), so that no verified check goes unrecorded.
//   - RecordVerified for an unchanged check at least every after the assignment's last
//     record in the chain; w is the window that ends with c, and it is closed.
//   - RecordNone for any other unchanged check, which joins the open window.
//
// Step is pure: the caller reads and stores the checkpoint and writes the record.
func Step(cp Checkpoint, ok bool, c Check, every time.Duration) (next Checkpoint, v Verdict, w Window) {
	if !ok || c.Changed || c.Revision != cp.Revision || c.Digest != cp.Digest || c.Phase != cp.Phase || c.Health != cp.Health {
		if ok {
			w = cp.window()
		}
		return Checkpoint{Revision: c.Revision, Digest: c.Digest, Phase: c.Phase, Health: c.Health, Since: c.Time, ChainedAt: c.Time}, RecordFull, w
	}
	next = cp
	if next.Count == 0 {
		next.FirstVerified = c.Time
	}
	next.LastVerified = c.Time
	next.Count++
	if c.Time.Sub(cp.ChainedAt) < every {
		return next, RecordNone, Window{}
	}
	w = next.window()
	next.ChainedAt, next.FirstVerified, next.LastVerified, next.Count = c.Time, time.Time{}, time.Time{}, 0
	return next, RecordVerified, w
}

// Close ends an assignment's checkpoint (its release left the cluster) and returns the
// window its last record closes.
func (cp Checkpoint) Close() Window { return cp.window() }

// VerifiedEvent is the ActionVerified record of window w of the assignment (cluster,
// release) whose checkpoint is cp: verified at cp's revision, unchanged since cp.Since,
// Count times from w.From to w.To.
func VerifiedEvent(actor, cluster, release string, cp Checkpoint, w Window) Event {
	d := w.Detail()
	d["revision"], d["digest"], d["phase"], d["since"] = cp.Revision, cp.Digest, cp.Phase, cp.Since.UTC()
	if cp.Health != "" {
		d["health"] = cp.Health
	}
	return Event{Time: w.To, Actor: actor, Action: ActionVerified, Cluster: cluster, Release: release, Detail: d}
}
