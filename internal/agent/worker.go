package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/agent/render"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// reconcileLoop reconciles every assignment when the desired state changes and again on the
// assignment's interval (the drift check), one assignment at a time. It runs from the cached
// desired state when the hub is away.
func (a *Agent) reconcileLoop(ctx context.Context) {
	done := map[string]string{}   // release -> what was last reconciled (digest, settings, generation)
	due := map[string]time.Time{} // release -> next periodic reconcile
	removedChecked := int64(-1)   // generation whose removed releases were pruned
	failures := map[string]int{}  // release -> consecutive failed reconciles
	for ctx.Err() == nil {
		ds := a.currentDesired()
		now := time.Now()
		if ds != nil {
			if ds.Generation != removedChecked {
				a.removeLeftovers(ctx, ds)
				removedChecked = ds.Generation
			}
			for _, as := range ds.Assignments {
				key := fmt.Sprintf("%d/%s", ds.Generation, as.String())
				if done[as.Release] == key && now.Before(due[as.Release]) {
					continue
				}
				retryIn, ok := a.reconcileOne(ctx, ds.Generation, as, done[as.Release] != key)
				done[as.Release] = key
				next := max(time.Duration(as.IntervalSeconds)*time.Second, time.Second)
				switch {
				case retryIn > 0:
					next = retryIn // the hub asked to come back later
				case ok:
					failures[as.Release] = 0
				default:
					// A failure (API server down, bad input fixed by the next commit) is retried
					// sooner than the drift interval: 2s, 4s, 8s ... up to the interval.
					failures[as.Release]++
					next = min(next, retryDelay(failures[as.Release]))
				}
				due[as.Release] = time.Now().Add(next)
			}
		}
		next := 24 * time.Hour
		for _, t := range due {
			next = min(next, time.Until(t))
		}
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-time.After(max(next, 50*time.Millisecond)):
		}
	}
}

// removeLeftovers removes what releases that left this cluster applied: every inventory in
// the cluster that the desired state no longer names. Reading the inventories from the
// cluster (not from the agent's disk) makes this work after the state dir was lost.
func (a *Agent) removeLeftovers(ctx context.Context, ds *agentv1.DesiredState) {
	names, err := a.reconciler.Inventories(ctx)
	if err != nil {
		a.log.Warn("list inventories", "error", err)
		return
	}
	for _, name := range names {
		if slices.ContainsFunc(ds.Assignments, func(as *agentv1.Assignment) bool { return as.Release == name }) {
			continue
		}
		res, err := a.reconciler.Remove(ctx, name)
		if err != nil {
			a.log.Error("remove release that left the cluster", "release", name, "error", err)
			continue
		}
		a.log.Info("removed release that left the cluster", "release", name, "pruned", res.Count(reconcile.Pruned))
		a.opts.Metrics.forget(name)
	}
}

// reconcileOne reconciles one assignment and reports the result. When the hub is too busy to
// serve the artifact it returns how soon to try again (0 otherwise); that is reported only on
// the assignment's first attempt, so that a busy hub does not get a report per retry.
// retryDelay is the wait before the n-th consecutive retry of a failed reconcile.
func retryDelay(n int) time.Duration {
	return min(2*time.Second<<min(n-1, 10), 5*time.Minute)
}

// reconcileOne reconciles one assignment and queues its report. retryIn > 0 means the hub
// shed load and asked to come back then; ok says whether the assignment is Ready.
func (a *Agent) reconcileOne(ctx context.Context, generation int64, as *agentv1.Assignment, first bool) (retryIn time.Duration, ok bool) {
	start := time.Now()
	st := &agentv1.AssignmentStatus{Release: as.Release, Generation: generation, Revision: as.Revision, Digest: as.Digest}
	res, err := a.apply(ctx, as)
	if ctx.Err() != nil {
		return 0, false // shutting down: this result is not the assignment's state
	}
	if busy, ok := asHubBusy(err); ok {
		a.log.Info("artifact download deferred", "release", as.Release, "error", err)
		if retryIn = busy.RetryIn; !first {
			return retryIn, false
		}
	}
	fillStatus(st, res, err)
	st.DurationSeconds = time.Since(start).Seconds()
	a.opts.Metrics.observeStatus(st)
	a.log.Info("reconciled", "release", as.Release, "revision", as.Revision, "phase", st.Phase, "objects", st.Objects, "error", st.Error)
	if err := a.st.enqueue(&agentv1.Report{ProducedAt: timestamppb.Now(), Statuses: []*agentv1.AssignmentStatus{st}}, a.opts.MaxOutbox); err != nil {
		a.log.Error("write report to the outbox", "error", err)
		return retryIn, st.Phase == "Ready"
	}
	a.opts.Metrics.setOutbox(a.st.outboxDepth())
	select {
	case a.flush <- struct{}{}:
	default:
	}
	return retryIn, st.Phase == "Ready"
}

func (a *Agent) apply(ctx context.Context, as *agentv1.Assignment) (*reconcile.Result, error) {
	root, err := a.artifactRoot(ctx, as.Digest)
	if err != nil {
		return nil, err
	}
	objects, err := render.Render(ctx, render.Options{Root: root, Path: as.Path, Vars: as.Vars})
	if err != nil {
		return nil, err
	}
	return a.reconciler.Reconcile(ctx, objects, reconcile.Options{
		Name:            as.Release,
		Namespace:       as.Namespace,
		CreateNamespace: as.CreateNamespace,
		Prune:           as.Prune,
		Wait:            as.Wait,
		Timeout:         time.Duration(as.TimeoutSeconds) * time.Second,
		SelfHeal:        as.SelfHeal,
	})
}

// fillStatus turns a reconcile result into the status the hub stores.
func fillStatus(st *agentv1.AssignmentStatus, res *reconcile.Result, err error) {
	st.Phase = "Ready"
	if err != nil {
		st.Phase, st.Error = "Failed", err.Error()
	}
	if _, ok := asHubBusy(err); ok {
		st.Phase = "Pending" // not failed: the download is retried shortly
	}
	if res == nil {
		return
	}
	for _, o := range res.Objects {
		switch o.Action {
		case reconcile.Pruned, reconcile.PruneSkipped:
			if o.Action == reconcile.Pruned {
				st.Pruned++
			}
			continue
		case reconcile.Created:
			st.Created++
		case reconcile.Configured:
			st.Configured++
		case reconcile.Conflict:
			st.Conflicts = append(st.Conflicts, fmt.Sprintf("%s in %q: owned by %v", o.ObjectRef, o.Namespace, o.ConflictWith))
		}
		st.Objects++
		if len(o.DriftPaths) > 0 {
			st.Drifted = st.Drifted || o.Action == reconcile.Drifted
			st.Drift = append(st.Drift, &agentv1.DriftedObject{
				Object: o.ObjectRef.String(), Namespace: o.Namespace, Paths: o.DriftPaths, Healed: o.Action == reconcile.Healed,
			})
		}
	}
	if len(st.Conflicts) > 0 && st.Phase == "Ready" {
		st.Phase, st.Error = "Failed", fmt.Sprintf("%d conflict(s)", len(st.Conflicts))
	}
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
