// Package fleetstep steps the rollouts of a fleet within a reschedule of the hub's
// controller: it reads what the pure planner (internal/hub/rollout) needs from the store
// (rollout records, the agents' last reports, the clusters' last-seen times) and from the
// plan (gates, previous documents), stores each rollout's next state by compare-and-swap,
// audits and announces its events, and rewrites the plan's assignments with the rollouts'
// decisions. It keeps the controller small and can be tested with a store alone.
package fleetstep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Store is the part of the hub's store rollouts use.
type Store interface {
	ListClusters(ctx context.Context) ([]store.Cluster, error)
	ListStatuses(ctx context.Context) ([]store.AssignmentStatus, error)
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	ListRecords(ctx context.Context, kind string) ([]store.Record, error)
	PutRecord(ctx context.Context, r store.Record, expect int64) (int64, error)
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error
}

// Deps are what the stepper needs; only Store is required.
type Deps struct {
	Store Store
	// LastSeen returns when a cluster's agent was last heard from; nil: the store's
	// LastSeen. A cluster not heard from within UnreachableAfter (default 2m) is
	// unreachable.
	LastSeen         func(store.Cluster) time.Time
	UnreachableAfter time.Duration
	// Record writes an audit record; Notify sends a rollout event to the notifications.
	Record func(ctx context.Context, e audit.Event)
	Notify func(release string, e phase.RolloutEvent)
	Logger *slog.Logger
}

// Outcome is what one Apply asks of the controller.
type Outcome struct {
	// Due is when the rollouts should be stepped again by time alone; zero: nothing due.
	Due time.Time
	// Keep are the artifacts the rollouts pin or may roll back to: garbage collection must
	// keep them.
	Keep map[string]bool
	// Retry: a rollout's state could not be read or stored; reschedule soon.
	Retry bool
	// Relabelled are, by cluster, who relabelled the clusters whose tombstone a rollout
	// held back and lets go now: the controller attributes the removal to them.
	Relabelled map[string]string
}

// Stepper steps rollouts; use it from one goroutine (the controller's).
type Stepper struct {
	d   Deps
	log *slog.Logger
	// seen is, by release, the time of the newest rollout event this stepper has seen:
	// users' actions newer than it go to the notifications.
	seen map[string]time.Time
	// now, out and relabelled belong to the Apply under way.
	now        time.Time
	out        Outcome
	relabelled map[string]string
	// heldActors are who relabelled the clusters whose removal an Apply that could not
	// step held back: the next Apply attributes it to them. Memory only, like the
	// controller's own note of relabels.
	heldActors map[string]string
}

// New returns a stepper.
func New(d Deps) *Stepper {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	if d.Notify == nil {
		d.Notify = func(string, phase.RolloutEvent) {}
	}
	if d.UnreachableAfter <= 0 {
		d.UnreachableAfter = 2 * time.Minute
	}
	return &Stepper{d: d, log: d.Logger, seen: map[string]time.Time{}}
}

// rolloutPoll is how soon a rollout with a cluster waiting for its agent's report is
// stepped again: soon after the report, without a reschedule for every report.
const rolloutPoll = 2 * time.Second

// Apply moves every release of fleet that has a rollout one step (rollout.Step) and sets,
// per cluster, the artifact its rollout assigns there instead of the newest; a deleted
// release that had one leaves its clusters along its waves (rollout.StepRemoval). arts are
// the newest artifacts by source name; clusters, plan and previous are the reschedule's.
//
// A release without spec.rollout is left exactly as Schedule made it, and its rollout
// record, if it had one, is deleted. A release with a rollout leaves the clusters it no
// longer selects wave by wave (rollout.Leaving): until a cluster's turn its previous
// assignment is kept, and Schedule's tombstone taken back; relabelled names, by cluster, who
// changed its labels since the last reschedule. When the inputs of the rollouts cannot be read (the
// store's statuses, clusters or records), every cluster of every release with a rollout
// keeps the artifact it had: a rollout never advances on what it could not read.
func (s *Stepper) Apply(ctx context.Context, now time.Time, fleet *v1alpha1.Fleet, arts map[string]schedule.Artifact, clusters []schedule.Cluster,
	plan *schedule.Plan, previous map[string]desired.Document, relabelled map[string]string) Outcome {
	s.now = now
	s.out = Outcome{}
	s.relabelled = maps.Clone(relabelled)
	for cluster, actor := range s.heldActors {
		if s.relabelled == nil {
			s.relabelled = map[string]string{}
		}
		if s.relabelled[cluster] == "" {
			s.relabelled[cluster] = actor // a newer relabel wins
		}
	}
	s.heldActors = nil
	var releases []*v1alpha1.Release
	for i := range fleet.Releases {
		if fleet.Releases[i].Spec.Rollout != nil {
			releases = append(releases, &fleet.Releases[i])
		}
	}
	records, recErr := s.d.Store.ListRecords(ctx, rollout.RecordKind)
	if recErr == nil && len(releases) == 0 && len(records) == 0 {
		return s.out // the common case: no rollouts at all
	}
	in, err := s.readInputs(ctx)
	if recErr != nil {
		err = fmt.Errorf("rollout records: %w", recErr)
	}
	if err != nil {
		if len(releases) > 0 {
			s.log.Error("rollouts not stepped; every cluster of a release with a rollout keeps its artifact", "error", err)
			s.out.Retry = true
		}
		for _, r := range releases {
			s.hold(plan, r.Metadata.Name, previous)
		}
		return s.out
	}
	byKey := make(map[string]store.Record, len(records))
	for _, rec := range records {
		byKey[rec.Key] = rec
	}
	keep := map[string]bool{}
	for _, r := range releases {
		name := r.Metadata.Name
		rec, had := byKey[name]
		delete(byKey, name)
		st, next := s.step(ctx, r, rec, had, in, arts[r.Spec.Source], clusters, plan, previous)
		if st == nil {
			s.hold(plan, name, previous)
			continue
		}
		for _, d := range []string{st.Current.Digest, st.Stable.Digest} {
			if d != "" {
				keep[d] = true
			}
		}
		s.due(next)
	}
	// Records of releases without a rollout any more: a deleted release leaves its clusters
	// along the waves of its last rollout (removal.go); the record of a release that
	// is still there without a rollout is deleted, so that a rollout added again later
	// starts from what the clusters run then.
	inFleet := make(map[string]bool, len(fleet.Releases))
	for i := range fleet.Releases {
		inFleet[fleet.Releases[i].Metadata.Name] = true
	}
	for key, rec := range byKey {
		if !inFleet[key] && s.removeAlongWaves(ctx, key, rec, in, clusters, plan, previous) {
			continue
		}
		if err := s.d.Store.DeleteRecord(ctx, rollout.RecordKind, key, rec.Version); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("rollout record of a release without a rollout not deleted", "release", key, "error", err)
		}
	}
	s.out.Keep = keep
	return s.out
}

// hold keeps release at what each cluster had (holdRollout), and remembers who relabelled
// the clusters whose removal it holds back.
func (s *Stepper) hold(plan *schedule.Plan, release string, previous map[string]desired.Document) {
	for _, cluster := range holdRollout(plan, release, previous) {
		if actor := s.relabelled[cluster]; actor != "" {
			if s.heldActors == nil {
				s.heldActors = map[string]string{}
			}
			s.heldActors[cluster] = actor
		}
	}
}

// due makes the rollouts be stepped again at t at the latest.
func (s *Stepper) due(t time.Time) {
	if !t.IsZero() && (s.out.Due.IsZero() || t.Before(s.out.Due)) {
		s.out.Due = t
	}
}

// inputs is what every rollout reads besides the plan: the clusters' reachability
// and their agents' last reports.
type inputs struct {
	reachable map[string]bool
	reports   map[string]store.AssignmentStatus // by cluster + "/" + release
}

func (s *Stepper) readInputs(ctx context.Context) (inputs, error) {
	cls, err := s.d.Store.ListClusters(ctx)
	if err != nil {
		return inputs{}, fmt.Errorf("list clusters: %w", err)
	}
	statuses, err := s.d.Store.ListStatuses(ctx)
	if err != nil {
		return inputs{}, fmt.Errorf("list assignment statuses: %w", err)
	}
	in := inputs{reachable: make(map[string]bool, len(cls)), reports: make(map[string]store.AssignmentStatus, len(statuses))}
	now := s.now
	for _, cl := range cls {
		seen := cl.LastSeen
		if s.d.LastSeen != nil {
			seen = s.d.LastSeen(cl)
		}
		in.reachable[cl.Name] = !seen.IsZero() && now.Sub(seen) < s.d.UnreachableAfter
	}
	for _, st := range statuses {
		in.reports[st.Cluster+"/"+st.Release] = st
	}
	return in, nil
}
