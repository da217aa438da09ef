package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// controller keeps desired state up to date: it re-reads the fleet configuration, polls each
// source on its interval (once per poll, however many clusters use it), packs new revisions
// into artifacts, and reschedules when anything changed.
type controller struct {
	h       *Hub
	trigger chan struct{}

	mu        sync.Mutex
	fleet     *v1alpha1.Fleet // last valid configuration; nil until one loaded
	fleetRev  string
	artifacts map[string]schedule.Artifact // by source name
	polled    map[string]time.Time         // by source name; only the run goroutine uses it
	inflight  map[string]bool              // sources being polled; only the run goroutine
	results   chan pollResult
	// fresh are artifacts packed by a poll whose result is not applied yet: garbage
	// collection must not take them in between.
	fresh        map[string]bool
	freshPending int // PutDir calls under way: GC waits for the next round
	problems     []schedule.Problem
	// fleetCommit is the commit of the last Git fleet read, for the audit record; only the
	// run goroutine uses it.
	fleetCommit source.Resolved
}

func newController(h *Hub) *controller {
	return &controller{
		h: h, trigger: make(chan struct{}, 1), artifacts: map[string]schedule.Artifact{},
		polled: map[string]time.Time{}, inflight: map[string]bool{}, results: make(chan pollResult, 16),
		fresh: map[string]bool{},
	}
}

// kick asks for a reschedule soon (a cluster was added, relabelled or removed), by whichever
// replica holds the controller lease.
func (c *controller) kick() {
	c.wake()
	if f := c.h.repl.fanout; f != nil {
		f.publish(eventClusters, "")
	}
}

// wake asks this replica's controller for a reschedule soon.
func (c *controller) wake() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

func (c *controller) run(ctx context.Context) {
	var lastFleetCheck time.Time
	lease := c.h.repl.lease
	for {
		// Only the replica holding the lease reads the fleet, polls and schedules; the others
		// wait to take over. A replica that takes over re-reads the fleet, polls every source
		// and reschedules at once: what it knew from an earlier term may be stale.
		if !lease.Held() {
			select {
			case <-ctx.Done():
				return
			case <-lease.changed:
			case <-c.trigger: // a reschedule is the holder's to do
			}
			if lease.Held() {
				lastFleetCheck = time.Time{}
				clear(c.polled)
				c.wake() // clusters may have changed while no replica held the lease
			}
			continue
		}
		changed := false
		if time.Since(lastFleetCheck) >= c.h.opts.FleetInterval {
			changed = c.loadFleet(ctx) || changed
			lastFleetCheck = time.Now()
		}
		changed = c.pollSources(ctx) || changed
		select {
		case <-c.trigger:
			changed = true
		default:
		}
		if changed {
			c.reschedule(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
			c.wake() // handled at the top of the next round
		case r := <-c.results:
			// A poll finished: apply it now rather than at the next tick.
			delete(c.inflight, r.source.Metadata.Name)
			if c.applyPoll(ctx, r) {
				c.wake()
			}
		case <-lease.changed: // lost: stop at the top of the next round
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// loadFleet reads the fleet configuration; an invalid one is reported and the last valid one
// stays in force. It reports whether the configuration in force changed.
func (c *controller) loadFleet(ctx context.Context) bool {
	fleet, rev, err := c.readFleet(ctx)
	st := store.FleetStatus{UpdatedAt: c.h.now()}
	c.mu.Lock()
	if err != nil {
		defer c.mu.Unlock()
		st.Revision, st.Error = c.fleetRev, err.Error()
		c.h.log.Warn("fleet configuration rejected; the last valid one stays in force", "error", err)
		_ = c.h.store.PutFleetStatus(ctx, st)
		return false
	}
	st.Revision = rev
	_ = c.h.store.PutFleetStatus(ctx, st)
	if rev == c.fleetRev {
		c.mu.Unlock()
		return false
	}
	c.h.log.Info("fleet configuration loaded", "revision", rev, "sources", len(fleet.Sources), "releases", len(fleet.Releases))
	prev := c.fleetRev
	c.fleet, c.fleetRev = fleet, rev
	c.mu.Unlock()
	d := map[string]any{"revision": rev, "previous": prev, "fleet": c.h.opts.Fleet, "sources": len(fleet.Sources), "releases": len(fleet.Releases)}
	if fc := c.fleetCommit; fc.Commit != "" && strings.Contains(rev, fc.Commit) {
		d["author"], d["message"] = fc.Author, fc.Message
	}
	c.h.record(ctx, audit.Event{Actor: "hub", Action: "fleet.revision", Detail: d})
	return true
}

func (c *controller) readFleet(ctx context.Context) (*v1alpha1.Fleet, string, error) {
	o := c.h.opts
	if st, err := os.Stat(o.Fleet); err == nil && st.IsDir() {
		rev, err := dirHash(o.Fleet)
		if err != nil {
			return nil, "", err
		}
		if rev == c.currentFleetRev() {
			return nil, rev, nil // unchanged: not re-parsed
		}
		f, err := v1alpha1.LoadDir(o.Fleet)
		return f, rev, err
	}
	g := source.Git{Name: "fleet", URL: o.Fleet, Branch: o.FleetBranch}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.h.poller.Resolve(ctx, g)
	if err != nil {
		return nil, "", err
	}
	c.fleetCommit = res
	if res.Commit == c.currentFleetRev() {
		return nil, res.Commit, nil
	}
	dir, err := os.MkdirTemp(c.h.opts.DataDir, "fleet-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := c.h.poller.Checkout(ctx, g, res.Commit, dir); err != nil {
		return nil, "", err
	}
	f, err := v1alpha1.LoadDir(filepath.Join(dir, filepath.FromSlash(o.FleetPath)))
	return f, res.Commit, err
}

func (c *controller) currentFleetRev() string {
	// Only the controller's goroutine writes fleetRev (in loadFleet, under c.mu, for readers
	// elsewhere) and only it calls this, so the read needs no lock.
	return c.fleetRev
}

// pollSources starts a poll of every source that is due and has none in flight, each in its
// own goroutine, and applies the results of the polls that finished. A source whose Git server
// hangs stalls only itself: the others keep polling. A new revision is packed into an
// artifact; a failing source keeps its last artifact, so nothing is pruned because a source
// failed. It reports whether any source's artifact changed.
func (c *controller) pollSources(ctx context.Context) bool {
	c.mu.Lock()
	fleet := c.fleet
	c.mu.Unlock()
	if fleet != nil {
		for _, s := range fleet.Sources {
			name := s.Metadata.Name
			if s.Spec.Git == nil || c.inflight[name] || time.Since(c.polled[name]) < s.Spec.IntervalOrDefault() {
				continue
			}
			c.polled[name] = time.Now()
			c.inflight[name] = true
			go func() {
				art, err := c.pollSource(ctx, s)
				select {
				case c.results <- pollResult{source: s, art: art, err: err}:
				case <-ctx.Done():
				}
			}()
		}
	}
	changed := false
	for {
		select {
		case r := <-c.results:
			delete(c.inflight, r.source.Metadata.Name)
			changed = c.applyPoll(ctx, r) || changed
		default:
			return changed
		}
	}
}

type pollResult struct {
	source v1alpha1.Source
	art    schedule.Artifact
	err    error
}

func (c *controller) applyPoll(ctx context.Context, r pollResult) bool {
	name := r.source.Metadata.Name
	st := store.SourceStatus{Name: name, URL: r.source.Spec.Git.URL, CheckedAt: c.h.now()}
	changed := false
	c.mu.Lock()
	prev, had := c.artifacts[name]
	if r.err != nil {
		st.Revision, st.Digest, st.Error = prev.Revision, prev.Digest, r.err.Error()
		c.h.log.Warn("source poll failed; clusters keep their state", "source", name, "error", r.err)
	} else {
		st.Revision, st.Digest = r.art.Revision, r.art.Digest
		delete(c.fresh, r.art.Digest)
		if !had || prev != r.art {
			c.artifacts[name] = r.art
			changed = true
			c.h.log.Info("source revision", "source", name, "revision", r.art.Revision, "digest", r.art.Digest)
		}
	}
	c.mu.Unlock()
	if changed {
		c.h.record(ctx, audit.Event{Actor: "hub", Action: "source.revision", Detail: map[string]any{
			"source": name, "url": r.art.URL, "revision": r.art.Revision, "digest": r.art.Digest, "previous": prev.Revision,
		}})
	}
	if err := c.h.store.PutSourceStatus(ctx, st); err != nil {
		c.h.log.Warn("store source status", "source", name, "error", err)
	}
	return changed
}

func (c *controller) pollSource(ctx context.Context, s v1alpha1.Source) (art schedule.Artifact, err error) {
	start := time.Now()
	defer func() {
		c.h.metrics.pollDuration.WithLabelValues(s.Metadata.Name).Observe(time.Since(start).Seconds())
		if err != nil {
			c.h.metrics.pollErrors.WithLabelValues(s.Metadata.Name).Inc()
		}
	}()
	git := s.Spec.Git
	g := source.Git{Name: s.Metadata.Name, URL: git.URL, Branch: git.Branch, Tag: git.Tag, Semver: git.Semver, Commit: git.Commit}
	if git.CredentialsFile != "" {
		creds, err := source.LoadCredentials(git.CredentialsFile)
		if err != nil {
			return schedule.Artifact{}, fmt.Errorf("source '%s': %w", s.Metadata.Name, err)
		}
		g.Auth = creds
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := c.h.poller.Resolve(ctx, g)
	if err != nil {
		return schedule.Artifact{}, err
	}
	c.mu.Lock()
	prev := c.artifacts[s.Metadata.Name]
	c.mu.Unlock()
	if prev.Revision == res.Revision && prev.URL == git.URL && c.h.artifacts.Has(prev.Digest) {
		return prev, nil
	}
	dir, err := os.MkdirTemp(c.h.opts.DataDir, "checkout-")
	if err != nil {
		return schedule.Artifact{}, err
	}
	defer os.RemoveAll(dir)
	if err := c.h.poller.Checkout(ctx, g, res.Commit, dir); err != nil {
		return schedule.Artifact{}, err
	}
	// Protect the artifact from garbage collection from before it exists until applyPoll has
	// made it part of the state that scheduling and GC see.
	c.mu.Lock()
	c.freshPending++
	c.mu.Unlock()
	digest, _, err := c.h.artifacts.PutDir(ctx, dir)
	c.mu.Lock()
	c.freshPending--
	if err == nil {
		c.fresh[digest] = true
	}
	c.mu.Unlock()
	if err != nil {
		return schedule.Artifact{}, fmt.Errorf("source '%s': pack %s: %w", s.Metadata.Name, res.Revision, err)
	}
	// The other replicas serve it from the shared store: not assigned before it is there.
	if err := c.h.shareArtifact(ctx, digest); err != nil {
		return schedule.Artifact{}, fmt.Errorf("source '%s': share artifact of %s: %w", s.Metadata.Name, res.Revision, err)
	}
	return schedule.Artifact{Source: s.Metadata.Name, URL: git.URL, Revision: res.Revision, Digest: digest}, nil
}

// reschedule computes every cluster's assignments and stores each cluster's desired state;
// the store raises the generation only where the document changed, and only those clusters'
// agents are woken. Artifacts no desired state refers to any more are deleted.
func (c *controller) reschedule(ctx context.Context) {
	defer func(start time.Time) { c.h.metrics.reschedule.Observe(time.Since(start).Seconds()) }(time.Now())
	c.mu.Lock()
	fleet := c.fleet
	arts := make(map[string]schedule.Artifact, len(c.artifacts))
	for k, v := range c.artifacts {
		arts[k] = v
	}
	keep := map[string]bool{}
	for d := range c.fresh {
		keep[d] = true
	}
	c.mu.Unlock()
	if fleet == nil {
		return // never schedule from "no configuration": that would remove everything
	}
	clusters, err := c.h.store.ListClusters(ctx)
	if err != nil {
		c.h.log.Error("list clusters", "error", err)
		return
	}
	in := make([]schedule.Cluster, len(clusters))
	previous := map[string]schedule.Document{}
	for i, cl := range clusters {
		in[i] = schedule.Cluster{Name: cl.Name, Labels: cl.Labels}
		if ds, err := c.h.store.GetDesiredState(ctx, cl.Name); err == nil {
			if prev, err := schedule.DecodeDocument(ds.Document); err == nil {
				previous[cl.Name] = prev
			}
		}
	}
	plan := schedule.Schedule(fleet, in, arts, previous, c.fleetRev)
	for _, a := range arts {
		keep[a.Digest] = true
	}
	for _, cl := range clusters {
		assignments := plan.Assignments[cl.Name]
		for _, a := range assignments {
			keep[a.Digest] = true
		}
		doc, err := schedule.Encode(plan.Document(cl.Name))
		if err != nil {
			c.h.log.Error("encode desired state", "cluster", cl.Name, "error", err)
			continue
		}
		gen, changed, err := c.h.store.PutDesiredState(ctx, cl.Name, doc)
		if err != nil {
			c.h.log.Error("store desired state", "cluster", cl.Name, "error", err)
			continue
		}
		if changed {
			c.h.metrics.desiredUpdates.Inc()
			c.h.log.Info("desired state changed", "cluster", cl.Name, "generation", gen, "assignments", len(assignments))
			c.h.watchers.notify(cl.Name)
			c.h.dashboardChanged()
		}
	}
	for _, p := range plan.Problems {
		c.h.log.Warn("scheduling problem", "release", p.Release, "cluster", p.Cluster, "problem", p.Message)
	}
	c.mu.Lock()
	c.problems = plan.Problems
	c.mu.Unlock()
	c.shareView(ctx, keep)
	c.collect(ctx, keep)
}

// collect deletes the artifacts, local and shared, that neither keep nor the controller's
// state at this moment refers to. keep was taken when reschedule began; a poll may have packed
// a new artifact since (it is in fresh, or its result already in artifacts), so that state is
// read again, under c.mu, and c.mu is held while deleting: a pack cannot start and finish
// unseen in between. With a pack under way it collects nothing (the next reschedule will).
func (c *controller) collect(ctx context.Context, keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freshPending > 0 {
		return
	}
	for d := range c.fresh {
		keep[d] = true
	}
	for _, a := range c.artifacts {
		keep[a.Digest] = true
	}
	if removed, err := c.h.artifacts.GC(keep); err != nil {
		c.h.log.Warn("artifact garbage collection", "error", err)
	} else if len(removed) > 0 {
		c.h.log.Info("artifacts garbage-collected", "removed", len(removed))
	}
	if sh := c.h.repl.shared; sh != nil {
		if n, err := sh.DeleteArtifactsExcept(ctx, keep); err != nil {
			c.h.log.Warn("shared artifact garbage collection", "error", err)
		} else if n > 0 {
			c.h.log.Info("shared artifacts garbage-collected", "removed", n)
		}
	}
}

// dirHash identifies a fleet directory's content, so an unchanged directory is not re-parsed.
func dirHash(dir string) (string, error) {
	h := sha256.New()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fleet directory %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
	}
	return "dir:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
