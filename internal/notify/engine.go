package notify

import (
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Event types, as in the fleet configuration.
const (
	Failed      = v1alpha1.EventFailed
	Drifted     = v1alpha1.EventDrifted
	Skewed      = v1alpha1.EventSkewed
	Unreachable = v1alpha1.EventUnreachable
	Recovered   = v1alpha1.EventRecovered
	// Rollout is a step of a release's rollout (started, wave-started, halted, ...), which
	// the hub's controller reports rather than the engine.
	Rollout = "rollout"
)

// conditions are the events an assignment can be in, in the order messages list them.
var conditions = []string{Failed, Drifted, Skewed, Unreachable}

// Assignment is one release on one cluster as the hub's fleet view shows it.
type Assignment struct {
	Release, Cluster string
	ClusterLabels    map[string]string
	Phase            hubclient.Phase
	DesiredRevision  string
	AppliedRevision  string
	// DesiredDigest and AppliedDigest are the artifacts behind the revisions; compared
	// when both are known.
	DesiredDigest, AppliedDigest string
	Drifted                      bool
	Conflicts                    int
	Error                        string
	Reachable                    bool
	// LastSeen is when the cluster's agent was last heard from; zero: never.
	LastSeen time.Time
}

// Snapshot is the whole fleet at one time.
type Snapshot struct {
	Time        time.Time
	Assignments []Assignment
	// ReachabilityKnown is false while the hub has not been up long enough for agents to
	// reconnect; unreachable then keeps its last value.
	ReachabilityKnown bool
}

// Rules are what one notification listens to.
type Rules struct {
	// Events enabled; nil: all.
	Events []string
	// Releases selected; nil: all.
	Releases []string
	// ClusterLabels every selected cluster has; nil: all clusters.
	ClusterLabels map[string]string
	// SkewAfter is the grace before an assignment off its desired revision is skewed.
	SkewAfter time.Duration
	// FlapWindow holds back an event for a condition announced less than this long ago.
	FlapWindow time.Duration
}

// RulesFor builds the rules of a configured notification.
func RulesFor(n v1alpha1.Notification, flapWindow time.Duration) Rules {
	return Rules{
		Events: n.Spec.EventsOrDefault(), Releases: n.Spec.Releases, ClusterLabels: n.Spec.ClusterSelector.MatchLabels,
		SkewAfter: n.Spec.SkewAfterOrDefault(), FlapWindow: flapWindow,
	}
}

func (r Rules) enabled(event string) bool { return r.Events == nil || slices.Contains(r.Events, event) }

func (r Rules) selects(a Assignment) bool {
	if len(r.Releases) > 0 && !slices.Contains(r.Releases, a.Release) {
		return false
	}
	return v1alpha1.LabelSelector{MatchLabels: r.ClusterLabels}.Matches(a.ClusterLabels)
}

// State is what a notification remembers between evaluations, by assignment
// ("release/cluster": both are DNS labels, so the key is unambiguous).
type State struct {
	Assignments map[string]AssignmentState `json:"assignments,omitempty"`
}

// AssignmentState is one assignment's memory.
type AssignmentState struct {
	// Announced are the conditions sent and not yet followed by "recovered".
	Announced []string `json:"announced,omitempty"`
	// Held are conditions entered within the flap window, not sent yet.
	Held []string `json:"held,omitempty"`
	// Unreachable is the last known reachability verdict, kept while it cannot be told.
	Unreachable bool `json:"unreachable,omitempty"`
	// OffDesiredSince is when the applied revision started to differ from the desired one.
	OffDesiredSince time.Time `json:"offDesiredSince,omitzero"`
	// LastSent is when each condition was last announced, for the flap window.
	LastSent map[string]time.Time `json:"lastSent,omitempty"`
	// Flaps counts conditions entered and held back since the last event of this assignment.
	Flaps int `json:"flaps,omitempty"`
}

// Event is one transition of one assignment.
type Event struct {
	Type            string            `json:"type"`
	Release         string            `json:"release"`
	Cluster         string            `json:"cluster"`
	ClusterLabels   map[string]string `json:"clusterLabels,omitempty"`
	Phase           hubclient.Phase   `json:"phase"`
	DesiredRevision string            `json:"desiredRevision"`
	AppliedRevision string            `json:"appliedRevision"`
	Drifted         bool              `json:"drifted"`
	Conflicts       int               `json:"conflicts"`
	Error           string            `json:"error,omitempty"`
	Reachable       bool              `json:"reachable"`
	LastSeen        *time.Time        `json:"lastSeen,omitempty"`
	// Time the transition was seen; Since when the condition began, where known (skewed:
	// when the assignment left its desired revision).
	Time  time.Time  `json:"time"`
	Since *time.Time `json:"since,omitempty"`
	// Cleared lists, for recovered, the conditions that ended.
	Cleared []string `json:"cleared,omitempty"`
	// Flaps counts conditions this assignment entered and left without an event, within
	// the flap window, since its last event.
	Flaps int `json:"flaps,omitempty"`
	// RolloutEvent, Wave, Message and Actor describe a rollout event (Type Rollout):
	// phase.RolloutEvent's type ("halted"), its wave, what happened, and who acted.
	RolloutEvent string `json:"rolloutEvent,omitempty"`
	Wave         string `json:"wave,omitempty"`
	Message      string `json:"message,omitempty"`
	Actor        string `json:"actor,omitempty"`
}

func key(a Assignment) string { return a.Release + "/" + a.Cluster }

// Evaluate computes the events of snap for a notification with rules r, given its state
// from the last evaluation. It neither changes prev nor keeps references to it.
func Evaluate(r Rules, prev State, snap Snapshot) (State, []Event) {
	next := State{Assignments: make(map[string]AssignmentState, len(prev.Assignments))}
	var events []Event
	now := snap.Time
	for _, a := range snap.Assignments {
		if !r.selects(a) {
			continue
		}
		st := clone(prev.Assignments[key(a)])
		onDesired := a.AppliedRevision != "" && a.AppliedRevision == a.DesiredRevision &&
			(a.DesiredDigest == "" || a.AppliedDigest == "" || a.DesiredDigest == a.AppliedDigest)
		switch {
		case onDesired:
			st.OffDesiredSince = time.Time{}
		case st.OffDesiredSince.IsZero():
			st.OffDesiredSince = now
		}
		if snap.ReachabilityKnown {
			st.Unreachable = !a.Reachable && !a.LastSeen.IsZero()
		}
		if st.Unreachable && !onDesired {
			// The grace for skew starts again when the cluster is back: it cannot catch up
			// before.
			st.OffDesiredSince = now
		}
		active := map[string]bool{
			Failed:  a.Phase == hubclient.PhaseFailed || a.Conflicts > 0,
			Drifted: a.Drifted,
			// An unreachable cluster cannot move to a new revision: that is said once, as
			// unreachable, not twice.
			Skewed:      !onDesired && !st.Unreachable && now.Sub(st.OffDesiredSince) >= r.SkewAfter,
			Unreachable: st.Unreachable,
		}
		ev := func(typ string) Event {
			e := Event{
				Type: typ, Release: a.Release, Cluster: a.Cluster, ClusterLabels: a.ClusterLabels, Phase: a.Phase,
				DesiredRevision: a.DesiredRevision, AppliedRevision: a.AppliedRevision, Drifted: a.Drifted,
				Conflicts: a.Conflicts, Error: a.Error, Reachable: !st.Unreachable, Time: now, Flaps: st.Flaps,
			}
			if !a.LastSeen.IsZero() {
				t := a.LastSeen
				e.LastSeen = &t
			}
			if typ == Skewed {
				t := st.OffDesiredSince
				e.Since = &t
			}
			return e
		}
		for _, c := range conditions {
			if !active[c] {
				st.Held = without(st.Held, c)
				continue
			}
			if !r.enabled(c) || slices.Contains(st.Announced, c) {
				continue
			}
			if last, ok := st.LastSent[c]; ok && now.Sub(last) < r.FlapWindow {
				if !slices.Contains(st.Held, c) {
					st.Held = append(st.Held, c)
					st.Flaps++
				}
				continue
			}
			events = append(events, ev(c))
			st.Announced = append(st.Announced, c)
			st.Held = without(st.Held, c)
			st.Flaps = 0
			if st.LastSent == nil {
				st.LastSent = map[string]time.Time{}
			}
			st.LastSent[c] = now
		}
		healthy := onDesired && a.Phase == hubclient.PhaseReady && !active[Failed] && !active[Drifted] && !st.Unreachable
		if healthy && len(st.Announced) > 0 {
			if r.enabled(Recovered) {
				e := ev(Recovered)
				e.Cleared = st.Announced
				events = append(events, e)
				st.Flaps = 0
			}
			st.Announced = nil
		}
		for c, at := range st.LastSent {
			if now.Sub(at) >= r.FlapWindow {
				delete(st.LastSent, c) // no longer holds anything back
			}
		}
		if len(st.LastSent) == 0 {
			st.LastSent = nil
		}
		if !st.isZero() {
			// A healthy assignment with nothing to remember takes no room in the state.
			next.Assignments[key(a)] = st
		}
	}
	slices.SortStableFunc(events, func(x, y Event) int {
		if d := eventOrder(x.Type) - eventOrder(y.Type); d != 0 {
			return d
		}
		if x.Release != y.Release {
			return strings.Compare(x.Release, y.Release)
		}
		return strings.Compare(x.Cluster, y.Cluster)
	})
	return next, events
}

func eventOrder(t string) int { return slices.Index(v1alpha1.NotificationEvents, t) }

func (s AssignmentState) isZero() bool {
	return len(s.Announced) == 0 && len(s.Held) == 0 && !s.Unreachable && s.OffDesiredSince.IsZero() && len(s.LastSent) == 0 && s.Flaps == 0
}

func clone(s AssignmentState) AssignmentState {
	s.Announced = slices.Clone(s.Announced)
	s.Held = slices.Clone(s.Held)
	if s.LastSent != nil {
		m := make(map[string]time.Time, len(s.LastSent))
		for k, v := range s.LastSent {
			m[k] = v
		}
		s.LastSent = m
	}
	return s
}

func without(list []string, v string) []string {
	out := slices.DeleteFunc(list, func(s string) bool { return s == v })
	if len(out) == 0 {
		return nil
	}
	return out
}
