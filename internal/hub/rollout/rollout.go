// Package rollout is the pure rollout planner: given a release's rollout, its clusters, their
// agents' reports and the time, it decides which cluster gets which artifact digest, and how
// the rollout's state moves (waves, bake, failures, halt, rollback, approvals). It does no I/O;
// the hub's controller stores its State as a record (kind RecordKind, key the release) and
// feeds it. Its scenarios are data-driven tests under testdata/.
//
// # Rules
//
// A rollout is pinned to one artifact (State.Current) from start to end. [Step] starts one
// when the release's newest artifact differs from the one the last rollout pinned; while a
// rollout runs, a newer artifact is queued (State.Queued) and starts once the rollout has
// completed, was aborted or rolled back, or halted with onFailure: rollback; with
// supersede: restart it starts at once, from the first wave (a halted rollout is never
// restarted by a commit: someone decides). Every cluster is assigned either the pinned
// artifact (its wave started it), the artifact it had (its wave has not started), or the
// stable one (the last that completed: rollback, and clusters that had nothing). So later
// waves never get a newer revision than earlier ones.
//
// A cluster belongs to the first wave whose selector matches it (no selector: every
// cluster). Within a wave clusters start in the order of a stable hash of their names, at
// most maxConcurrent at once, never while their gates block new revisions, and never while
// unreachable (skip passes them over: they get the pinned artifact and are counted once
// they report; wait holds the wave). A started cluster is done once its agent reports the
// pinned digest Ready (and health Current when it reports health) without a break for the
// wave's bake; Failed at the pinned digest, or not Ready within progressDeadline of its
// start (time blocked by a gate or unreachable with wait does not count), is a failure.
// More than maxFailures failures in a wave halt the rollout; onFailure: rollback sends the
// failed clusters back to the stable artifact.
//
// A wave with approval: required waits (WaitingApproval) until [Act] approves it. Pause
// stops new starts, resume lifts it; abort ends the rollout where it stands; rollback
// sends every cluster that got the pinned artifact back to the stable one.
//
// Removals follow the waves too. A deleted release leaves its clusters along the waves of
// its last rollout ([StepRemoval]). A release still in the fleet leaves the clusters it no
// longer selects (Input.Leaving: a relabel, narrowed targets) wave by wave beside its
// rollout, with waves of its own ([Leaving]): each cluster in the wave its labels matched
// before the change, maxConcurrent tombstones at once, each within the wave's bake, approval
// and pause; until its turn a cluster keeps the artifact it had.
package rollout

import (
	"errors"
	"hash/fnv"
	"strings"
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

// Phases of a rollout (State.Phase, phase.RolloutView.Phase). Paused is only a view's:
// the state keeps Paused beside Progressing or WaitingApproval.
const (
	PhaseIdle            = "Idle"
	PhaseProgressing     = "Progressing"
	PhasePaused          = "Paused"
	PhaseWaitingApproval = "WaitingApproval"
	PhaseHalted          = "Halted"
	PhaseCompleted       = "Completed"
	PhaseAborted         = "Aborted"
	PhaseRolledBack      = "RolledBack"
)

// Phases of a cluster in a rollout (ClusterState.Phase).
const (
	ClusterPending     = "Pending"
	ClusterProgressing = "Progressing"
	ClusterBaking      = "Baking"
	ClusterDone        = "Done"
	ClusterFailed      = "Failed"
	ClusterSkipped     = "Skipped"
	ClusterRolledBack  = "RolledBack"
)

// Phases of a wave in a view.
const (
	WavePending         = "Pending"
	WaveWaitingApproval = "WaitingApproval"
	WaveWaitingWindow   = "WaitingWindow"
	WaveProgressing     = "Progressing"
	WaveDone            = "Done"
	WaveHalted          = "Halted"
)

// Types of events (phase.RolloutEvent.Type).
const (
	EventStarted     = "started"
	EventWaveStarted = "wave-started"
	EventWaveDone    = "wave-done"
	EventApproved    = "approved"
	EventPaused      = "paused"
	EventResumed     = "resumed"
	EventHalted      = "halted"
	EventAborted     = "aborted"
	EventRolledBack  = "rolled-back"
	EventCompleted   = "completed"
	EventSuperseded  = "superseded"
	EventQueued      = "queued"
	EventFailed      = "cluster-failed"
)

// MaxEvents bounds the events a State keeps (the newest); the audit trail keeps them all.
const MaxEvents = 50

// rank orders clusters within a wave: a stable hash of the name, so that adding a cluster
// never reshuffles the others and percentages pick the same clusters every time.
func rank(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// active reports whether a rollout in phase p is under way (it may still move).
func active(p string) bool {
	return p == PhaseProgressing || p == PhaseWaitingApproval || p == PhaseHalted
}

// short is a revision as a status line shows it: the commit cut to 12 digits
// ("main@sha1:0123456789ab").
func short(rev string) string {
	prefix, sha, ok := strings.Cut(rev, "sha1:")
	if ok && len(sha) > 12 {
		return prefix + "sha1:" + sha[:12]
	}
	return rev
}
