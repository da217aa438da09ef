package fleetstep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/window"
)

// rolloutCASTries bounds the compare-and-swap rounds of one rollout's step: a user's
// action (from any replica) writes the same record.
const rolloutCASTries = 5

// step steps release r's rollout, stores its state by compare-and-swap, audits and
// announces its events, and applies its decisions to plan. It returns the state stored and
// when to step again; a nil state when it could not be stored (the caller then holds every
// cluster at what it had).
func (s *Stepper) step(ctx context.Context, r *v1alpha1.Release, rec store.Record, had bool, in inputs,
	newest schedule.Artifact, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]desired.Document) (*rollout.State, time.Time) {
	name := r.Metadata.Name
	now := s.now
	input := rollout.Input{Spec: r.Spec.Rollout, Project: r.Spec.Project, Now: now,
		Newest: rollout.Artifact{Digest: newest.Digest, Revision: newest.Revision, URL: newest.URL}}
	var gateNext time.Time
	leaving := map[string]bool{}
	for _, cl := range clusters {
		rc := rollout.Cluster{Name: cl.Name, Labels: cl.Labels, Reachable: in.reachable[cl.Name]}
		var prev desired.Assignment
		if i, ok := findAssignment(previous[cl.Name].Assignments, name); ok {
			prev = previous[cl.Name].Assignments[i]
			rc.Had = heldArtifact(prev)
		}
		if _, ok := findAssignment(plan.Assignments[cl.Name], name); !ok {
			if rc.Had.Digest != "" {
				// It holds the release, which no longer selects it: it leaves wave by wave.
				rc.Actor = s.relabelled[cl.Name]
				input.Leaving = append(input.Leaving, rc)
				leaving[cl.Name] = true
			}
			continue
		}
		if gates := plan.Gates[cl.Name]; len(gates) > 0 {
			v := window.Evaluate(gates, name, now)
			if v.Revisions {
				rc.Blocked = v.Reason
				if rc.Blocked == "" {
					rc.Blocked = "held by a window, freeze or suspension"
				}
			}
			if !v.Next.IsZero() && (gateNext.IsZero() || v.Next.Before(gateNext)) {
				gateNext = v.Next
			}
		}
		if rep, ok := in.reports[cl.Name+"/"+name]; ok {
			rc.Report = &rollout.Report{Digest: rep.Digest, Phase: rep.Phase, Health: rep.Health, At: rep.ReportedAt}
			if prev.SourceDigest != "" && rep.Digest == prev.Digest {
				// The agent reports the per-path artifact it was given: the rollout counts
				// in the source's.
				rc.Report.Digest = prev.SourceDigest
			}
		}
		input.Clusters = append(input.Clusters, rc)
	}

	st, res, ok := s.cas(ctx, name, rec, had, func(st *rollout.State) rollout.Result { return rollout.Step(st, input) })
	if !ok {
		return nil, time.Time{}
	}
	s.notifyActions(name, &st, res.Events)
	for _, e := range res.Events {
		s.announce(ctx, name, &st, e)
	}
	for cluster, d := range res.Assign {
		switch {
		case !leaving[cluster]:
			overrideAssignment(plan, cluster, name, d)
		case d.Artifact.Digest != "":
			keepAssignment(plan, cluster, name, previous, d.Line)
		case d.Actor != "":
			// Its tombstone goes out now, later than the relabel that caused it.
			if s.out.Relabelled == nil {
				s.out.Relabelled = map[string]string{}
			}
			s.out.Relabelled[cluster] = d.Actor
		}
	}
	next := res.Next
	if !gateNext.IsZero() && (next.IsZero() || gateNext.Before(next)) {
		next = gateNext
	}
	if awaitsReports(&st) {
		if poll := now.Add(rolloutPoll); next.IsZero() || poll.Before(next) {
			next = poll
		}
	}
	return &st, next
}

// awaitsReports reports whether a started cluster waits for its agent's report: only then
// is the rollout stepped every rolloutPoll (a wave waiting for a window, an approval or a
// bake is due at a known time).
func awaitsReports(st *rollout.State) bool {
	if st.Phase != rollout.PhaseProgressing {
		return false
	}
	for _, cs := range st.Clusters {
		if cs.Phase == rollout.ClusterProgressing && cs.HeldSince.IsZero() {
			return true
		}
	}
	return false
}

// cas steps the rollout record of release (rec, when had) with step and stores the
// result by compare-and-swap, stepping again from the stored record when it changed in
// between (a user's action, another replica). It stores nothing when nothing but the time
// moved. It reports false, having logged why, when the state could not be read or stored.
func (s *Stepper) cas(ctx context.Context, release string, rec store.Record, had bool, step func(*rollout.State) rollout.Result) (rollout.State, rollout.Result, bool) {
	expect := int64(0)
	if had {
		expect = rec.Version
	}
	for try := 0; ; try++ {
		var st rollout.State
		if expect > 0 {
			if err := json.Unmarshal(rec.Data, &st); err != nil {
				s.log.Error("rollout record does not decode; its clusters keep their artifacts until it is fixed or deleted",
					"release", release, "error", err)
				return st, rollout.Result{}, false
			}
		}
		before := stateBytes(&st)
		res := step(&st)
		if bytes.Equal(before, stateBytes(&st)) {
			return st, res, true // nothing but the time moved: no write
		}
		data, err := json.Marshal(&st)
		if err != nil {
			s.log.Error("rollout state does not encode", "release", release, "error", err)
			return st, res, false
		}
		_, err = s.d.Store.PutRecord(ctx, store.Record{Kind: rollout.RecordKind, Key: release, Data: data}, expect)
		if err == nil {
			return st, res, true
		}
		if !errors.Is(err, store.ErrConflict) || try+1 >= rolloutCASTries {
			s.log.Error("rollout state not stored; its clusters keep their artifacts", "release", release, "error", err)
			s.out.Retry = true
			return st, res, false
		}
		rec, err = s.d.Store.GetRecord(ctx, rollout.RecordKind, release)
		switch {
		case errors.Is(err, store.ErrNotFound):
			expect = 0
		case err != nil:
			s.log.Error("rollout state not read again after a conflict", "release", release, "error", err)
			return st, res, false
		default:
			expect = rec.Version
		}
	}
}

// stateBytes is st without its update time: what tells a step that changed something.
func stateBytes(st *rollout.State) []byte {
	cp := *st
	cp.UpdatedAt = time.Time{}
	b, _ := json.Marshal(&cp)
	return b
}

// announce audits one rollout event and sends it to the notifications.
func (s *Stepper) announce(ctx context.Context, release string, st *rollout.State, e phase.RolloutEvent) {
	actor := e.Actor
	if actor == "" {
		actor = "hub"
	}
	detail := map[string]any{"type": e.Type, "message": e.Message, "revision": st.Current.Revision, "digest": st.Current.Digest}
	if e.Wave != "" {
		detail["wave"] = e.Wave
	}
	s.d.Record(ctx, audit.Event{Time: e.At, Actor: actor, Action: "rollout." + e.Type, Release: release, Cluster: e.Cluster, Detail: detail})
	s.log.Info("rollout", "release", release, "event", e.Type, "wave", e.Wave, "cluster", e.Cluster, "message", e.Message)
	s.d.Notify(release, e)
}

// notifyActions sends to the notifications the users' actions (approved, paused, ...)
// recorded in st since this stepper last looked: the user API audited them when it wrote
// them, from whichever replica took the request. ownEvents are this step's, announced by
// the caller. After a restart or a takeover the actions already recorded are not sent again.
func (s *Stepper) notifyActions(release string, st *rollout.State, ownEvents []phase.RolloutEvent) {
	last, known := s.seen[release]
	newest := last
	for _, e := range st.Events {
		if e.At.After(newest) {
			newest = e.At
		}
		if !known || e.Actor == "" || !e.At.After(last) || slices.Contains(ownEvents, e) {
			continue
		}
		s.d.Notify(release, e)
	}
	s.seen[release] = newest
}
