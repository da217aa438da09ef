package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/backoff"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/phase"
	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/textcut"
	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// reconcileLoop reconciles every assignment when the desired state changes and again on the
// assignment's interval (the drift check), dependencies first. It runs from the cached
// desired state when the hub is away. Gates (windows, freezes, suspensions) and dependsOn are
// checked on every pass against the agent's clock and its own state: when what they hold back
// changes (a window opens, a dependency becomes Ready), the release is reconciled at once, and
// the loop wakes at the instant a window opens or closes.
//
// Each project's releases reconcile one at a time, in dependency order, in a lane of their
// own (lanes.go); lanes of different projects run side by side, up to maxLanes. So a team
// whose release takes its whole render budget, or whose API calls hang, delays only its own
// releases: the platform's next commit lands meanwhile.
func (a *Agent) reconcileLoop(ctx context.Context) {
	l := newLanes(a)
	defer l.wait()
	removedChecked := int64(-1) // generation whose tombstones were all acted on
	var pruneFailures int       // consecutive failed passes over the tombstones
	var pruneDue time.Time      // when to try the tombstones again after a failure
	for ctx.Err() == nil {
		ds := a.currentDesired()
		now := a.clock.Now()
		var wake time.Time // the next instant a gate may change its verdict on a held release
		if ds != nil {
			// A release a tombstone drops may still be in a lane's pass that started before:
			// it is removed once that pass is over (which wakes this loop), not under it.
			if ds.Generation != removedChecked && !now.Before(pruneDue) && !l.anyInFlight(ds.Removed) {
				if err := a.removeTombstoned(ctx, ds); err != nil {
					pruneFailures++
					pruneDue = now.Add(retryDelay(pruneFailures))
					a.log.Warn("tombstoned releases not all removed; will retry", "generation", ds.Generation, "error", err)
				} else {
					removedChecked, pruneFailures, pruneDue = ds.Generation, 0, time.Time{}
				}
			}
			wake = l.dispatch(ctx, ds)
		}
		now = a.clock.Now()
		next := min(24*time.Hour, l.nextDue(now))
		if !pruneDue.IsZero() {
			next = min(next, pruneDue.Sub(now))
		}
		if !wake.IsZero() {
			// Pending changes apply when the window opens, not at the next interval.
			next = min(next, wake.Sub(now))
		}
		t := a.clock.NewTimer(max(next, 50*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-a.changed:
		case <-t.C():
		case res := <-l.results:
			// Stopped before the lane counts as done, so that a test that waits for one
			// timer and no lane in flight sees the loop idle only after the next pass.
			t.Stop()
			l.finish(res)
		}
		t.Stop()
	}
}

// skipUnchanged says whether a reconcile may take the objects it renders as they were last
// applied for unchanged by their hash, without reading them (reconcile.Options.SkipUnchanged):
// only for a new revision or new settings (changed), not for a sync request, and only while the
// last reconcile that read every object (lastFull) is less than the release's interval ago.
// So a hand edit is healed, or reported, at the latest about one interval after the last drift
// check, however often revisions arrive; after a restart the first reconcile reads everything.
func skipUnchanged(changed, syncRequest bool, lastFull, now time.Time, interval time.Duration) bool {
	return changed && !syncRequest && !lastFull.IsZero() && now.Before(lastFull.Add(interval))
}

// removeTombstoned removes what the releases that left this cluster applied: a release is
// pruned only when the desired state carries a tombstone for it. Inventories are read from
// the cluster (not from the agent's disk), so that this works after the state dir was lost;
// an inventory the desired state neither assigns nor tombstones is left alone and logged
// (its release may be another agent's, or its tombstone not yet written), and a tombstone
// whose inventory is gone does nothing.
func (a *Agent) removeTombstoned(ctx context.Context, ds *desired.State) error {
	names, err := a.reconciler.Inventories(ctx)
	if err != nil {
		return fmt.Errorf("list inventories: %w", err)
	}
	assigned := map[string]bool{}
	for _, as := range ds.Assignments {
		assigned[as.Release] = true
	}
	tombstones := map[string]*desired.Tombstone{}
	for i := range ds.Removed {
		tombstones[ds.Removed[i].Release] = &ds.Removed[i]
	}
	var errs []error
	for _, name := range names {
		t := tombstones[name]
		switch {
		case assigned[name]:
			if t != nil {
				a.log.Warn("release both assigned and tombstoned; kept", "release", name, "reason", t.Reason)
			}
		case t == nil:
			a.log.Warn("inventory in the cluster neither assigned nor tombstoned; left alone", "release", name, "generation", ds.Generation)
		default:
			res, err := a.reconciler.Remove(ctx, name)
			if err != nil {
				a.log.Error("remove release that left the cluster", "release", name, "reason", t.Reason, "error", err)
				errs = append(errs, fmt.Errorf("release %q: %w", name, err))
				continue
			}
			a.log.Info("removed release that left the cluster", "release", name, "reason", t.Reason,
				"fleetRevision", t.FleetRevision, "pruned", res.Count(reconcile.Pruned))
			a.opts.Metrics.forget(name)
			if err := a.enqueue(removalStatus(ds.Generation, t, res)); err != nil {
				a.log.Error("write removal report to the outbox", "release", name, "error", err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Nothing of a tombstoned release is in force any more (its inventory is gone, now or
	// before): were it assigned again while a window holds it, the agent must apply nothing
	// rather than bring its old revision back.
	for _, t := range ds.Removed {
		if !assigned[t.Release] {
			if err := a.st.forgetRelease(t.Release); err != nil {
				a.log.Error("forget the revision in force of a release that left the cluster", "release", t.Release, "error", err)
			}
		}
	}
	return nil
}

// maxRemovalObjects bounds the objects a removal report names; Pruned counts them all.
const maxRemovalObjects = 100

// removalStatus is the report of a release removed after its tombstone: what the tombstone
// said and what was pruned, for the hub's audit trail.
func removalStatus(generation int64, t *desired.Tombstone, res *reconcile.Result) *agentv1.AssignmentStatus {
	rm := &agentv1.Removal{Reason: t.Reason, FleetRevision: t.FleetRevision, Actor: t.Actor}
	st := &agentv1.AssignmentStatus{
		Release: t.Release, Generation: generation, Revision: t.Revision, Digest: t.Digest,
		Phase: string(phase.Removed), Removal: rm,
	}
	for _, o := range res.Objects {
		name := o.ObjectRef.String()
		if o.Namespace != "" {
			name += " in " + o.Namespace
		}
		switch o.Action {
		case reconcile.Pruned:
			st.Pruned++
			if len(rm.PrunedObjects) < maxRemovalObjects {
				rm.PrunedObjects = append(rm.PrunedObjects, name)
			}
		case reconcile.PruneSkipped:
			if len(rm.KeptObjects) < maxRemovalObjects {
				rm.KeptObjects = append(rm.KeptObjects, name)
			}
		}
	}
	return st
}

// retryDelay is the wait before the n-th consecutive retry of a failed reconcile: 2s,
// doubling, up to 5 minutes.
func retryDelay(n int) time.Duration {
	return backoff.Step(n, 2*time.Second, 5*time.Minute)
}

// reconcileOne reconciles one assignment and queues its report. retryIn > 0 means the hub
// shed load and asked to come back then (reported only on the assignment's first attempt, so
// that a busy hub does not get a report per retry); reported is the phase reported ("" when
// nothing was).
//
// h says what is held back. A new revision (see sameContent) that a gate or a dependency
// holds is not applied: the agent reconciles the assignment in force instead, with the new
// settings, and reports Waiting with the held revision as pending (nothing at all when
// nothing is in force yet). A gate on prune or self-heal turns them off for this reconcile;
// drift is still reported. A sync request with override passes the gates, once.
//
// skip lets the objects rendered as last applied be taken for unchanged without reading them
// (see skipUnchanged).
func (a *Agent) reconcileOne(ctx context.Context, generation int64, as *desired.Assignment, h hold, first, skip bool) (retryIn time.Duration, reported phase.Phase) {
	start := a.clock.Now()
	if h.overrides() {
		if h.verdict.Blocked() {
			a.log.Warn("sync request overrides the gates for one reconcile", "release", as.Release, "sync", h.sync.ID,
				"actor", h.sync.Actor, "overridden", h.verdict.Reason)
		}
		h.verdict = window.Verdict{}
	}
	eff := as
	var waiting string
	inForce := a.st.applied(as.Release)
	if h.holdsContent() && (inForce == nil || !sameContent(inForce, as)) {
		waiting = h.reason()
		if inForce == nil {
			// Never applied here: nothing to keep reconciling until the hold ends.
			a.prefetch(ctx, as)
			st := &agentv1.AssignmentStatus{
				Release: as.Release, Generation: generation, Phase: string(phase.Waiting),
				Waiting: waiting, PendingRevision: as.Revision, PendingDigest: as.Digest, SyncId: h.syncID(),
			}
			a.record(as, false, false)
			a.log.Info("waiting", "release", as.Release, "pending", as.Revision, "for", waiting)
			a.report(st)
			return 0, phase.Waiting
		}
		eff = withContent(as, inForce)
	}
	if waiting != "" {
		a.prefetch(ctx, as)
	}
	st := &agentv1.AssignmentStatus{Release: as.Release, Generation: generation, Revision: eff.Revision, Digest: eff.Digest, SyncId: h.syncID()}
	res, reached, err := a.apply(ctx, eff, applyMode{deferPrune: h.verdict.Prune, selfHeal: !h.verdict.SelfHeal, skipUnchanged: skip})
	if ctx.Err() != nil {
		return 0, "" // shutting down: this result is not the assignment's state
	}
	// Applied (in part at least), as is the revision in force from now on.
	applied := reached && eff == as
	if busy, ok := asHubBusy(err); ok {
		a.log.Info("artifact download deferred", "release", as.Release, "error", err)
		if retryIn = busy.RetryIn; !first {
			return retryIn, ""
		}
	}
	fillStatus(st, res, err)
	if n := deferredPrunes(res); n > 0 && waiting == "" {
		// The revision is in force; only the prune of what it dropped waits for the gate.
		st.Waiting = fmt.Sprintf("%s (it holds prune: %d %s that left the set wait to be pruned)", h.verdict.Reason, n, plural(n, "object"))
	}
	if waiting != "" {
		st.Waiting, st.PendingRevision, st.PendingDigest = waiting, as.Revision, as.Digest
		if phase.Phase(st.Phase) == phase.Ready {
			// A failure of the revision in force says more than that a newer one waits.
			st.Phase = string(phase.Waiting)
		}
	}
	if h.verdict.Prune || h.verdict.SelfHeal {
		a.log.Info("gates hold back prune or self-heal", "release", as.Release, "prune", !h.verdict.Prune, "selfHeal", !h.verdict.SelfHeal, "reason", h.verdict.Reason)
	}
	st.DurationSeconds = clock.Since(a.clock, start).Seconds()
	a.record(as, applied, phase.Phase(st.Phase) == phase.Ready)
	a.log.Info("reconciled", "release", as.Release, "revision", eff.Revision, "phase", st.Phase, "objects", st.Objects, "error", st.Error, "waiting", st.Waiting)
	a.report(st)
	return retryIn, phase.Phase(st.Phase)
}

// prefetch puts the artifact of a held revision in the cache, so that it lands when the
// hold ends even if the hub is unreachable by then. A failure only delays that to the apply.
func (a *Agent) prefetch(ctx context.Context, as *desired.Assignment) {
	// The artifacts of its Helm values and patch files too (helm.go).
	for _, digest := range as.Digests() {
		if _, err := a.artifactRoot(ctx, digest); err != nil && ctx.Err() == nil {
			a.log.Debug("artifact of a held revision not fetched yet", "release", as.Release, "revision", as.Revision, "artifact", digest, "error", err)
		}
	}
}

// report queues st and signals the report loop.
func (a *Agent) report(st *agentv1.AssignmentStatus) {
	a.opts.Metrics.observeStatus(st)
	if err := a.enqueue(st); err != nil {
		a.log.Error("write report to the outbox", "error", err)
		return
	}
	a.opts.Metrics.setOutbox(a.st.outboxDepth())
	select {
	case a.flush <- struct{}{}:
	default:
	}
}

// record keeps in the state dir, in one write when anything changed, whether as is now the
// revision in force (applied), so that a gate holds it across restarts and with the hub
// away, and whether its reconcile was Ready, for the releases that depend on it.
func (a *Agent) record(as *desired.Assignment, applied, ready bool) {
	rec := a.st.release(as.Release)
	if applied {
		data, err := appliedBytes(as)
		if err != nil {
			a.log.Error("record the revision in force; a gate may not hold it after a restart", "release", as.Release, "error", err)
		} else {
			rec.Applied = data
		}
	}
	rec.ReadyKey = ""
	if ready {
		rec.ReadyKey = assignmentKey(as)
	}
	if err := a.st.setRelease(as.Release, rec); err != nil {
		a.log.Error("record the revision in force and readiness; a gate or dependsOn may not see them after a restart", "release", as.Release, "error", err)
	}
}

// enqueue queues a report of st, unless the desired state the agent refuses dropped its
// release: the hub no longer takes reports on it, and one queued would block every report
// behind it (the refusal itself is in every heartbeat).
func (a *Agent) enqueue(st *agentv1.AssignmentStatus) error {
	a.enqueueMu.Lock()
	defer a.enqueueMu.Unlock()
	if a.droppedByRefused(st.Release) {
		return nil
	}
	return a.st.enqueue(&agentv1.Report{ProducedAt: timestamppb.New(a.clock.Now()), Statuses: []*agentv1.AssignmentStatus{st}}, a.opts.MaxOutbox)
}

// applyMode is what the gates allow one reconcile: prune held back (objects that left the
// set stay in the inventory until it is allowed) and self-heal (where the assignment asks for
// them); and whether objects rendered as last applied may go unread (skipUnchanged).
type applyMode struct {
	deferPrune, selfHeal, skipUnchanged bool
}

// deferredPrunes counts the objects a reconcile kept for a prune the gates hold back.
func deferredPrunes(res *reconcile.Result) int {
	if res == nil {
		return 0
	}
	return res.Count(reconcile.PruneDeferred)
}

func plural(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// apply renders and reconciles as, with prune and self-heal only where the assignment and
// the gates allow them. reached says the artifact was at hand, so the reconcile ran (or the
// artifact did not render): as is then the revision in force.
func (a *Agent) apply(ctx context.Context, as *desired.Assignment, mode applyMode) (res *reconcile.Result, reached bool, err error) {
	root, err := a.artifactRoot(ctx, as.Digest)
	if err != nil {
		return nil, false, err
	}
	// The artifacts of its Helm values and patch files must be at hand as well (helm.go).
	for _, digest := range as.Helm.Digests() {
		if _, err := a.artifactRoot(ctx, digest); err != nil {
			return nil, false, fmt.Errorf("artifact of a Helm values or patch file: %w", err)
		}
	}
	helm, err := a.helmOptions(ctx, as)
	if err != nil {
		return nil, true, err
	}
	dec, err := a.decryptor(as)
	if err != nil {
		return nil, true, err
	}
	objects, err := a.renderer.Render(ctx, render.Options{Root: root, Path: as.Path, Vars: as.Vars, Helm: helm, Decrypt: dec,
		Budget: renderBudget(as.RenderBudget), Project: projectName(as), Release: as.Release})
	if err != nil {
		a.helmFailed(helm)
		return nil, true, err
	}
	res, err = a.reconciler.Reconcile(ctx, objects, reconcile.Options{
		Name:            as.Release,
		Namespace:       as.Namespace,
		CreateNamespace: as.CreateNamespace,
		Prune:           as.Prune,
		DeferPrune:      mode.deferPrune,
		Wait:            as.Wait,
		Timeout:         as.Timeout,
		SelfHeal:        as.SelfHeal && mode.selfHeal,
		SkipUnchanged:   mode.skipUnchanged,
		// The project's rules come with the assignment, so they are enforced from the cached
		// desired state as well when the hub is away.
		Project:         as.Project,
		Ignore:          ignoreRules(as.Ignore),
		RespectManagers: as.RespectManagers,
		Adopt:           adoptRules(as, a.clock.Now()),
		// A chart's helm.sh/hook objects are hooks (helm.go).
		Hooks: helm != nil,
	})
	if err != nil {
		a.helmFailed(helm)
	}
	return res, true, err
}

// ignoreRules are the assignment's ignore rules as the reconciler takes them.
func ignoreRules(in []v1alpha1.IgnoreRule) []reconcile.IgnoreRule {
	out := make([]reconcile.IgnoreRule, 0, len(in))
	for _, r := range in {
		out = append(out, reconcile.IgnoreRule{Group: r.Target.Group, Kind: r.Target.Kind, Name: r.Target.Name, Namespace: r.Target.Namespace, Paths: r.Paths})
	}
	return out
}

// fillStatus turns a reconcile result into the status the hub stores: counts, conflicts that
// name the owner and the field, and the detail of the objects that need a look (objectDetails).
func fillStatus(st *agentv1.AssignmentStatus, res *reconcile.Result, err error) {
	ph := phase.Ready
	defer func() { st.Phase = string(ph) }()
	if err != nil {
		ph, st.Error = phase.Failed, err.Error()
	}
	if _, ok := asHubBusy(err); ok {
		ph = phase.Pending // not failed: the download is retried shortly
	}
	if res == nil {
		return
	}
	for _, o := range res.Objects {
		switch o.Action {
		case reconcile.Pruned, reconcile.PruneSkipped, reconcile.PruneDeferred:
			if o.Action == reconcile.Pruned {
				st.Pruned++
			}
			continue
		case reconcile.Rejected:
			continue // not applied: its error is in the object details
		case reconcile.Created:
			st.Created++
		case reconcile.Configured:
			st.Configured++
		case reconcile.Conflict:
			// Who holds what: `configmap/settings in namespace "ns": .data.logEndpoint owned
			// by field manager "team-x"`, as status, the dashboard and notifications show it.
			st.Conflicts = append(st.Conflicts, textcut.Cut(o.ConflictText(), maxDetailMessage))
		}
		st.Objects++
		if len(o.DriftPaths) > 0 {
			st.Drifted = st.Drifted || o.Action == reconcile.Drifted
			st.Drift = append(st.Drift, &agentv1.DriftedObject{
				Object: o.ObjectRef.String(), Namespace: o.Namespace, Paths: o.DriftPaths, Healed: o.Action == reconcile.Healed,
			})
		}
	}
	if len(st.Conflicts) > 0 && ph == phase.Ready {
		ph, st.Error = phase.Failed, conflictError(st.Conflicts)
	}
	st.ObjectDetails, st.ObjectDetailsOmitted = objectDetails(res.Objects)
	if res.Ready != nil {
		st.Health = "Current"
		if !*res.Ready {
			st.Health = "InProgress"
			for _, o := range res.Objects {
				if o.Health != nil && o.Health.Status == "Failed" {
					st.Health = "Failed"
				}
			}
		}
	}
}
