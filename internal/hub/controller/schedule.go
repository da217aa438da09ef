package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/pathpack"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// loadPlan reads every cluster's stored document: the plan the next reschedule compares
// against. A document that does not decode leaves its cluster out of scheduling (its stored
// document stays as it is) rather than being taken for an empty one.
func (c *Controller) loadPlan(ctx context.Context) error {
	states, err := c.d.Store.ListDesiredStates(ctx)
	if err != nil {
		return fmt.Errorf("read the stored desired states: %w", err)
	}
	c.plan = make(map[string]desired.Document, len(states))
	c.broken = map[string]bool{}
	for _, ds := range states {
		c.remember(ds)
	}
	return nil
}

// remember puts a stored document into the plan, or logs why it cannot.
func (c *Controller) remember(ds store.DesiredState) {
	doc, err := desired.DecodeDocument(ds.Document)
	if err != nil {
		c.log.Error("stored desired state does not decode; the cluster is left as it is until it is fixed",
			"cluster", ds.Cluster, "generation", ds.Generation, "error", err)
		c.broken[ds.Cluster] = true
		c.plan[ds.Cluster] = desired.Document{}
		return
	}
	delete(c.broken, ds.Cluster)
	c.plan[ds.Cluster] = doc
}

// reschedule computes every cluster's assignments and stores each cluster's desired state;
// the store raises the generation only where the document changed, and only those clusters'
// agents are woken. Artifacts no desired state refers to any more are deleted.
//
// It changes nothing when it cannot read everything it needs, and compares against the plan
// in memory, never against a read that failed: see the package documentation.
func (c *Controller) reschedule(ctx context.Context) {
	defer func(start time.Time) { c.d.Metrics.Reschedule.Observe(clock.Since(c.clock, start).Seconds()) }(c.clock.Now())
	c.mu.Lock()
	fleet, fleetRev := c.scheduledLocked(), c.fleetRev
	arts := maps.Clone(c.artifacts)
	c.mu.Unlock()
	if fleet == nil {
		c.retryAt = time.Time{}
		return // never schedule from "no configuration": that would remove everything
	}
	if c.plan == nil {
		if err := c.loadPlan(ctx); err != nil {
			c.plan = nil
			c.skip(err)
			return
		}
	}
	clusters, err := c.d.Store.ListClusters(ctx)
	if err != nil {
		c.skip(fmt.Errorf("list clusters: %w", err))
		return
	}
	in := make([]schedule.Cluster, 0, len(clusters))
	previous := make(map[string]desired.Document, len(clusters))
	listed := make(map[string]bool, len(clusters))
	allReadable := true
	for _, cl := range clusters {
		listed[cl.Name] = true
		if _, ok := c.plan[cl.Name]; !ok {
			// Registered since the plan was loaded (here or on another replica): read what is
			// stored, which is nothing for a new cluster.
			ds, err := c.d.Store.GetDesiredState(ctx, cl.Name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				c.plan[cl.Name] = desired.Document{Assignments: []desired.Assignment{}}
			case err != nil:
				c.skip(fmt.Errorf("desired state of cluster %q: %w", cl.Name, err))
				return
			default:
				c.remember(ds)
			}
		}
		if c.broken[cl.Name] {
			allReadable = false
			continue
		}
		in = append(in, schedule.Cluster{Name: cl.Name, Labels: cl.Labels})
		previous[cl.Name] = c.plan[cl.Name]
	}
	for name := range c.plan {
		if !listed[name] {
			delete(c.plan, name) // removed: the store dropped its desired state
			delete(c.broken, name)
		}
	}

	plan := schedule.ScheduleWith(c.opts.Schedule, fleet, in, arts, previous, fleetRev)
	c.keepUnloaded(&plan, previous)
	c.applyGates(ctx, fleet, in, &plan)
	c.applySyncs(ctx, in, &plan)
	c.applyRollouts(ctx, fleet, in, &plan, previous)
	// Each cluster gets the artifacts of its own paths, never the whole source (pathpack).
	if c.paths == nil {
		c.paths = pathpack.New(pathpack.Options{Store: c.d.Artifacts, WorkDir: c.opts.WorkDir, Share: c.d.ShareArtifact})
	}
	c.paths.Apply(ctx, fleet, &plan, previous)
	failed, changed := 0, 0
	actors := c.relabels.take()
	// In batches of one transaction each, encoded batch by batch (10,000 documents of 20
	// assignments are 80 MB): the agents of a batch are woken as soon as it is stored.
	for start := 0; start < len(in); start += store.DesiredBatchSize {
		writes := make([]store.DesiredWrite, 0, store.DesiredBatchSize)
		docs := make(map[string]desired.Document, store.DesiredBatchSize)
		removals := map[string][]desired.Tombstone{}
		for _, cl := range in[start:min(start+store.DesiredBatchSize, len(in))] {
			doc := plan.Document(cl.Name)
			if removed := attributeRemovals(previous[cl.Name], doc, actors[cl.Name]); len(removed) > 0 {
				removals[cl.Name] = removed
			}
			data, err := desired.Encode(doc)
			if err != nil {
				c.log.Error("encode desired state; the cluster keeps its last one", "cluster", cl.Name, "error", err)
				failed++
				continue
			}
			writes = append(writes, store.DesiredWrite{Cluster: cl.Name, Document: data})
			docs[cl.Name] = doc
		}
		store.WriteDesiredStates(ctx, c.d.Store, writes, func(batch []store.DesiredWrite, results []store.DesiredWritten) {
			for i, r := range results {
				name := batch[i].Cluster
				if r.Err != nil {
					c.log.Error("store desired state; the cluster keeps its last one", "cluster", name, "error", r.Err)
					if a := actors[name]; a != "" {
						c.relabels.note(name, a) // still to be attributed at the retry
					}
					failed++
					continue
				}
				doc := docs[name]
				c.plan[name] = doc
				c.auditRemovals(ctx, name, removals[name])
				if r.Changed {
					c.d.Metrics.DesiredUpdates.Inc()
					changed++
					c.log.Debug("desired state changed", "cluster", name, "generation", r.Generation,
						"assignments", len(doc.Assignments), "removed", len(doc.Removed))
					c.d.DesiredChanged(name)
				}
			}
		})
	}
	if changed > 0 {
		// One line per reschedule, not per cluster: a new revision changes every cluster's.
		c.log.Info("desired states changed", "clusters", changed, "fleet", fleetRev)
	}
	if failed > 0 {
		c.retryAt = c.clock.Now().Add(retryAfterFailure)
		c.log.Warn("desired state not stored for some clusters; retrying", "clusters", failed, "in", retryAfterFailure)
	} else {
		c.retryAt = time.Time{}
	}
	c.logProblems(fleet, arts, plan.Problems)
	c.mu.Lock()
	c.problems = append(slices.Clone(c.tenantProblems), plan.Problems...)
	c.mu.Unlock()

	// Keep every artifact a stored document refers to: c.plan holds, for a cluster whose
	// store failed, the document still stored.
	keep := map[string]bool{}
	for _, a := range arts {
		keep[a.Digest] = true
	}
	for _, doc := range c.plan {
		for _, a := range doc.Assignments {
			for _, d := range a.Digests() {
				keep[d] = true
			}
		}
	}
	for d := range c.rolloutKeep {
		keep[d] = true // a rollout's stable artifact, which a rollback assigns again
	}
	c.shareView(ctx, keep)
	if allReadable {
		c.collect(ctx, keep)
	}
}

// skip logs why a reschedule changed nothing and has it tried again shortly.
func (c *Controller) skip(err error) {
	c.retryAt = c.clock.Now().Add(retryAfterFailure)
	c.log.Error("reschedule skipped; every desired state is left as it is", "error", err, "retry", retryAfterFailure)
}

// logProblems logs the scheduling problems. A release whose source has not finished its
// first poll yet (the hub just started, or the source was just added) is not a problem but a
// wait: one INFO line per release. Everything else is a WARN line per problem.
func (c *Controller) logProblems(fleet *v1alpha1.Fleet, arts map[string]schedule.Artifact, problems []schedule.Problem) {
	sourceOf := make(map[string]string, len(fleet.Releases))
	for _, r := range fleet.Releases {
		sourceOf[r.Metadata.Name] = r.Spec.Source
	}
	waiting := map[string]int{} // by release: clusters
	var order []string
	for _, p := range problems {
		src := sourceOf[p.Release]
		if _, ok := arts[src]; !ok && src != "" && !c.pollFailed[src] {
			if waiting[p.Release] == 0 {
				order = append(order, p.Release)
			}
			waiting[p.Release]++
			continue
		}
		c.log.Warn("scheduling problem", "release", p.Release, "cluster", p.Cluster, "problem", p.Message)
	}
	for _, r := range order {
		c.log.Info("release waits for the first poll of its source", "release", r, "source", sourceOf[r], "clusters", waiting[r])
	}
}
