package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/window"
)

// rolloutPoll is how soon a rollout with clusters in progress is stepped again: soon after
// their agents report, without a reschedule for every report.
const rolloutPoll = 2 * time.Second

// rolloutCASTries bounds the compare-and-swap rounds of one rollout's step: a user's
// action (from any replica) writes the same record.
const rolloutCASTries = 5

// applyRollouts moves every release that has a rollout one step (internal/hub/rollout) and
// sets, per cluster, the digest its rollout assigns there instead of the newest.
//
// A release without spec.rollout is left exactly as Schedule made it, and its rollout
// record, if it had one, is deleted. When the inputs of the rollouts cannot be read (the
// store's statuses, clusters or records), every cluster of every release with a rollout
// keeps the artifact it had: a rollout never advances on what it could not read.
func (c *Controller) applyRollouts(ctx context.Context, fleet *v1alpha1.Fleet, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]schedule.Document) {
	c.rolloutDue, c.rolloutKeep = time.Time{}, nil
	var releases []*v1alpha1.Release
	for i := range fleet.Releases {
		if fleet.Releases[i].Spec.Rollout != nil {
			releases = append(releases, &fleet.Releases[i])
		}
	}
	records, recErr := c.d.Store.ListRecords(ctx, rollout.RecordKind)
	if recErr == nil && len(releases) == 0 && len(records) == 0 {
		return // the common case: no rollouts at all
	}
	in, err := c.rolloutInputs(ctx)
	if recErr != nil {
		err = fmt.Errorf("rollout records: %w", recErr)
	}
	if err != nil {
		if len(releases) > 0 {
			c.log.Error("rollouts not stepped; every cluster of a release with a rollout keeps its artifact", "error", err)
			c.retryAt = c.clock.Now().Add(retryAfterFailure)
		}
		for _, r := range releases {
			holdRollout(plan, r.Metadata.Name, previous)
		}
		return
	}
	byKey := make(map[string]store.Record, len(records))
	for _, rec := range records {
		byKey[rec.Key] = rec
	}
	c.mu.Lock()
	arts := make(map[string]schedule.Artifact, len(c.artifacts))
	for k, v := range c.artifacts {
		arts[k] = v
	}
	c.mu.Unlock()
	keep := map[string]bool{}
	for _, r := range releases {
		name := r.Metadata.Name
		rec, had := byKey[name]
		delete(byKey, name)
		st, next := c.stepRollout(ctx, r, rec, had, in, arts[r.Spec.Source], clusters, plan, previous)
		if st == nil {
			holdRollout(plan, name, previous)
			continue
		}
		for _, d := range []string{st.Current.Digest, st.Stable.Digest} {
			if d != "" {
				keep[d] = true
			}
		}
		c.due(next)
	}
	// Records of releases without a rollout any more: a deleted release leaves its clusters
	// along the waves of its last rollout (rollout_removal.go); the record of a release that
	// is still there without a rollout is deleted, so that a rollout added again later
	// starts from what the clusters run then.
	inFleet := make(map[string]bool, len(fleet.Releases))
	for i := range fleet.Releases {
		inFleet[fleet.Releases[i].Metadata.Name] = true
	}
	for key, rec := range byKey {
		if !inFleet[key] && c.removeAlongWaves(ctx, key, rec, in, clusters, plan, previous) {
			continue
		}
		if err := c.d.Store.DeleteRecord(ctx, rollout.RecordKind, key, rec.Version); err != nil && !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("rollout record of a release without a rollout not deleted", "release", key, "error", err)
		}
	}
	c.rolloutKeep = keep
}

// due makes the controller step the rollouts again at t at the latest.
func (c *Controller) due(t time.Time) {
	if !t.IsZero() && (c.rolloutDue.IsZero() || t.Before(c.rolloutDue)) {
		c.rolloutDue = t
	}
}

// rolloutInputs is what every rollout reads besides the plan: the clusters' reachability
// and their agents' last reports.
type rolloutInputs struct {
	reachable map[string]bool
	reports   map[string]store.AssignmentStatus // by cluster + "/" + release
}

func (c *Controller) rolloutInputs(ctx context.Context) (rolloutInputs, error) {
	cls, err := c.d.Store.ListClusters(ctx)
	if err != nil {
		return rolloutInputs{}, fmt.Errorf("list clusters: %w", err)
	}
	statuses, err := c.d.Store.ListStatuses(ctx)
	if err != nil {
		return rolloutInputs{}, fmt.Errorf("list assignment statuses: %w", err)
	}
	in := rolloutInputs{reachable: make(map[string]bool, len(cls)), reports: make(map[string]store.AssignmentStatus, len(statuses))}
	now := c.clock.Now()
	for _, cl := range cls {
		seen := cl.LastSeen
		if c.d.LastSeen != nil {
			seen = c.d.LastSeen(cl)
		}
		in.reachable[cl.Name] = !seen.IsZero() && now.Sub(seen) < c.d.UnreachableAfter
	}
	for _, s := range statuses {
		in.reports[s.Cluster+"/"+s.Release] = s
	}
	return in, nil
}

// stepRollout steps release r's rollout, stores its state by compare-and-swap, audits and
// announces its events, and applies its decisions to plan. It returns the state stored and
// when to step again; a nil state when it could not be stored (the caller then holds every
// cluster at what it had).
func (c *Controller) stepRollout(ctx context.Context, r *v1alpha1.Release, rec store.Record, had bool, in rolloutInputs,
	newest schedule.Artifact, clusters []schedule.Cluster, plan *schedule.Plan, previous map[string]schedule.Document) (*rollout.State, time.Time) {
	name := r.Metadata.Name
	now := c.clock.Now()
	input := rollout.Input{Spec: r.Spec.Rollout, Now: now,
		Newest: rollout.Artifact{Digest: newest.Digest, Revision: newest.Revision, URL: newest.URL}}
	var gateNext time.Time
	for _, cl := range clusters {
		if _, ok := findAssignment(plan.Assignments[cl.Name], name); !ok {
			continue // the release does not select it (any more): Schedule decided
		}
		rc := rollout.Cluster{Name: cl.Name, Labels: cl.Labels, Reachable: in.reachable[cl.Name]}
		if i, ok := findAssignment(previous[cl.Name].Assignments, name); ok {
			a := previous[cl.Name].Assignments[i]
			rc.Had = rollout.Artifact{Digest: a.Digest, Revision: a.Revision, URL: a.URL}
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
		if s, ok := in.reports[cl.Name+"/"+name]; ok {
			rc.Report = &rollout.Report{Digest: s.Digest, Phase: s.Phase, Health: s.Health, At: s.ReportedAt}
		}
		input.Clusters = append(input.Clusters, rc)
	}

	st, res, ok := c.casRollout(ctx, name, rec, had, func(st *rollout.State) rollout.Result { return rollout.Step(st, input) })
	if !ok {
		return nil, time.Time{}
	}
	c.notifyActions(name, &st, res.Events)
	for _, e := range res.Events {
		c.announceRollout(ctx, name, &st, e)
	}
	for cluster, d := range res.Assign {
		overrideAssignment(plan, cluster, name, d)
	}
	next := res.Next
	if !gateNext.IsZero() && (next.IsZero() || gateNext.Before(next)) {
		next = gateNext
	}
	if st.Phase == rollout.PhaseProgressing && !st.Paused {
		if poll := now.Add(rolloutPoll); next.IsZero() || poll.Before(next) {
			next = poll
		}
	}
	return &st, next
}

// casRollout steps the rollout record of release (rec, when had) with step and stores the
// result by compare-and-swap, stepping again from the stored record when it changed in
// between (a user's action, another replica). It stores nothing when nothing but the time
// moved. It reports false, having logged why, when the state could not be read or stored.
func (c *Controller) casRollout(ctx context.Context, release string, rec store.Record, had bool, step func(*rollout.State) rollout.Result) (rollout.State, rollout.Result, bool) {
	expect := int64(0)
	if had {
		expect = rec.Version
	}
	for try := 0; ; try++ {
		var st rollout.State
		if expect > 0 {
			if err := json.Unmarshal(rec.Data, &st); err != nil {
				c.log.Error("rollout record does not decode; its clusters keep their artifacts until it is fixed or deleted",
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
			c.log.Error("rollout state does not encode", "release", release, "error", err)
			return st, res, false
		}
		_, err = c.d.Store.PutRecord(ctx, store.Record{Kind: rollout.RecordKind, Key: release, Data: data}, expect)
		if err == nil {
			return st, res, true
		}
		if !errors.Is(err, store.ErrConflict) || try+1 >= rolloutCASTries {
			c.log.Error("rollout state not stored; its clusters keep their artifacts", "release", release, "error", err)
			c.retryAt = c.clock.Now().Add(retryAfterFailure)
			return st, res, false
		}
		rec, err = c.d.Store.GetRecord(ctx, rollout.RecordKind, release)
		switch {
		case errors.Is(err, store.ErrNotFound):
			expect = 0
		case err != nil:
			c.log.Error("rollout state not read again after a conflict", "release", release, "error", err)
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

// announceRollout audits one rollout event and sends it to the notifications.
func (c *Controller) announceRollout(ctx context.Context, release string, st *rollout.State, e hubapi.RolloutEvent) {
	actor := e.Actor
	if actor == "" {
		actor = "hub"
	}
	detail := map[string]any{"type": e.Type, "message": e.Message, "revision": st.Current.Revision, "digest": st.Current.Digest}
	if e.Wave != "" {
		detail["wave"] = e.Wave
	}
	c.d.Record(ctx, audit.Event{Time: e.At, Actor: actor, Action: "rollout." + e.Type, Release: release, Cluster: e.Cluster, Detail: detail})
	c.log.Info("rollout", "release", release, "event", e.Type, "wave", e.Wave, "cluster", e.Cluster, "message", e.Message)
	if c.d.RolloutEvent != nil {
		c.d.RolloutEvent(release, e)
	}
}

// notifyActions sends to the notifications the users' actions (approved, paused, ...)
// recorded in st since this controller last looked: the user API audited them when it wrote
// them, from whichever replica took the request. ownEvents are this step's, announced by
// the caller. After a restart or a takeover the actions already recorded are not sent again.
func (c *Controller) notifyActions(release string, st *rollout.State, ownEvents []hubapi.RolloutEvent) {
	if c.rolloutSeen == nil {
		c.rolloutSeen = map[string]time.Time{}
	}
	last, known := c.rolloutSeen[release]
	newest := last
	for _, e := range st.Events {
		if e.At.After(newest) {
			newest = e.At
		}
		if !known || e.Actor == "" || !e.At.After(last) || slices.Contains(ownEvents, e) {
			continue
		}
		if c.d.RolloutEvent != nil {
			c.d.RolloutEvent(release, e)
		}
	}
	c.rolloutSeen[release] = newest
}

// findAssignment returns the assignment of release in as (sorted by release).
func findAssignment(as []schedule.Assignment, release string) (int, bool) {
	return slices.BinarySearchFunc(as, release, func(a schedule.Assignment, r string) int { return strings.Compare(a.Release, r) })
}

// overrideAssignment sets the artifact of release's assignment on cluster to d's: a zero
// artifact leaves the release out (the cluster never had it, so no tombstone is written).
func overrideAssignment(plan *schedule.Plan, cluster, release string, d rollout.Decision) {
	as := plan.Assignments[cluster]
	i, ok := findAssignment(as, release)
	if !ok {
		return
	}
	if d.Artifact.Digest == "" {
		plan.Assignments[cluster] = slices.Delete(slices.Clone(as), i, i+1)
		return
	}
	a := &as[i]
	a.Digest, a.Revision, a.URL, a.Rollout = d.Artifact.Digest, d.Artifact.Revision, d.Artifact.URL, d.Line
}

// holdRollout keeps release at what each cluster had: its previous assignment's artifact,
// or no assignment for a cluster that never had it.
func holdRollout(plan *schedule.Plan, release string, previous map[string]schedule.Document) {
	for cluster := range plan.Assignments {
		d := rollout.Decision{Line: "held: the rollout's state could not be read or stored"}
		if a, ok := findAssignment(previous[cluster].Assignments, release); ok {
			p := previous[cluster].Assignments[a]
			d.Artifact = rollout.Artifact{Digest: p.Digest, Revision: p.Revision, URL: p.URL}
		}
		overrideAssignment(plan, cluster, release, d)
	}
}
