package agent

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/phase"
)

// maxLanes bounds the projects whose releases reconcile at the same time on one cluster. It
// matches the renderer's slots (render.Lazy), which go round-robin between projects too.
const maxLanes = 4

// releaseState is what the reconcile loop remembers of one release between its reconciles.
// While the release is in a lane's pass, only that lane reads or writes it.
type releaseState struct {
	done     string    // what was last reconciled: generation and assignment (laneKeys)
	held     string    // what the gates and dependencies held at that reconcile (hold.key)
	due      time.Time // the next periodic reconcile
	failures int       // consecutive failed reconciles
	// checked is when a reconcile last read all the release's objects from the cluster (a
	// drift check); between two, a new revision skips the objects it renders as they were
	// last applied.
	checked time.Time
}

// lanes hands each project's releases to a pass of their own: one project's releases
// reconcile one at a time, in dependency order, as the whole cluster's once did; different
// projects' passes run side by side, up to maxLanes, the longest-waiting project first. Only
// the reconcile loop's goroutine calls its methods; a pass reads only what it was given.
type lanes struct {
	a      *Agent
	states map[string]*releaseState
	// busy is the projects with a pass in flight; inFlight the releases those passes hold.
	// (Agent.passes counts the same passes, for other goroutines to read.)
	busy     map[string]bool
	inFlight map[string]bool
	// turn is the sequence number of each project's last pass: the lowest goes first when
	// more projects have work than lanes are free.
	turn map[string]uint64
	seq  uint64
	// answered is, for each request to sync every release, the projects whose pass has
	// answered it; it is handled once every project on the cluster has.
	answered map[string]map[string]bool
	// handled remembers the requests acted on in this process too, so that a failure to
	// write them to the state dir does not make every pass act on them again. Only the ids
	// the current desired state still carries are kept.
	handled map[string]bool
	results chan lanePass
	wg      sync.WaitGroup
	cur     *generation
}

// generation is what one desired state says, worked out once when it arrives.
type generation struct {
	gen      int64
	gates    gateSet
	assigned map[string]*desired.Assignment
	cycles   map[string]string
	keys     map[string]string // release -> generation and assignment, as releaseState.done
	// groups are the releases by project, each in dependency order.
	groups []laneGroup
}

// laneGroup is one project's releases, in dependency order.
type laneGroup struct {
	project  string
	releases []*desired.Assignment
}

// lanePass is one pass of one project's lane: its releases, the sync requests they answer,
// and the desired state it began on. It comes back through lanes.results when it is over.
type lanePass struct {
	laneGroup
	g      *generation
	now    time.Time
	states map[string]*releaseState
	syncs  syncPass
}

func newLanes(a *Agent) *lanes {
	return &lanes{
		a: a, states: map[string]*releaseState{}, busy: map[string]bool{}, inFlight: map[string]bool{},
		turn: map[string]uint64{}, answered: map[string]map[string]bool{}, handled: map[string]bool{},
		results: make(chan lanePass),
	}
}

// wait returns once every pass has ended (their context is the loop's, ended before).
func (l *lanes) wait() { l.wg.Wait() }

// anyInFlight reports whether a release one of the tombstones names is in a pass.
func (l *lanes) anyInFlight(removed []desired.Tombstone) bool {
	return slices.ContainsFunc(removed, func(t desired.Tombstone) bool { return l.inFlight[t.Release] })
}

// nextDue is the wait until the earliest periodic reconcile of a release not in a pass (the
// end of a pass wakes the loop by itself).
func (l *lanes) nextDue(now time.Time) time.Duration {
	next := 24 * time.Hour
	for rel, st := range l.states {
		if !l.inFlight[rel] {
			next = min(next, st.due.Sub(now))
		}
	}
	return next
}

// dispatch starts a pass for each project that has something to do and no pass in flight,
// while lanes are free, and says when a gate may next change its verdict on a release.
func (l *lanes) dispatch(ctx context.Context, ds *desired.State) (wake time.Time) {
	a := l.a
	if l.cur == nil || ds.Generation != l.cur.gen {
		l.newGeneration(ds)
	}
	g := l.cur
	pending := l.settleSyncs(ds, a.pendingSyncs(ds, l.handled))
	now := a.clock.Now()
	groups := slices.Clone(g.groups)
	slices.SortStableFunc(groups, func(x, y laneGroup) int { return cmp.Compare(l.turn[x.project], l.turn[y.project]) })
	for _, lg := range groups {
		if l.busy[lg.project] || slices.ContainsFunc(lg.releases, func(as *desired.Assignment) bool { return l.inFlight[as.Release] }) {
			continue // its pass (or, for a release that moved, another project's) ends first
		}
		p := takeSyncs(pending, lg, l.answered)
		need := false
		for _, as := range lg.releases {
			h := a.holdOf(g, as, p.byRelease[as.Release])
			if h.verdict.Blocked() && !h.verdict.Next.IsZero() && (wake.IsZero() || h.verdict.Next.Before(wake)) {
				wake = h.verdict.Next
			}
			need = need || !l.state(as.Release).current(g.keys[as.Release], h, now)
		}
		if need && len(l.busy) < maxLanes {
			l.start(ctx, lanePass{laneGroup: lg, g: g, now: now, syncs: p})
		}
	}
	return wake
}

// newGeneration works out what a new desired state says once, and forgets what concerns
// only releases and sync requests it no longer carries.
func (l *lanes) newGeneration(ds *desired.State) {
	g := &generation{gen: ds.Generation, gates: l.a.gatesOf(ds), assigned: make(map[string]*desired.Assignment, len(ds.Assignments)),
		keys: make(map[string]string, len(ds.Assignments))}
	all := make([]*desired.Assignment, len(ds.Assignments))
	for i := range ds.Assignments {
		all[i] = &ds.Assignments[i]
	}
	var ordered []*desired.Assignment
	ordered, g.cycles = dependencyOrder(all)
	index := map[string]int{}
	for _, as := range ordered {
		g.assigned[as.Release] = as
		g.keys[as.Release] = fmt.Sprintf("%d/%s", ds.Generation, assignmentKey(as))
		p := projectOf(as)
		i, ok := index[p]
		if !ok {
			i = len(g.groups)
			index[p] = i
			g.groups = append(g.groups, laneGroup{project: p})
		}
		g.groups[i].releases = append(g.groups[i].releases, as)
	}
	l.cur = g
	for rel := range l.states {
		if g.assigned[rel] == nil && !l.inFlight[rel] {
			delete(l.states, rel)
		}
	}
	carried := map[string]bool{}
	for _, r := range ds.Syncs {
		carried[r.ID] = true
	}
	maps.DeleteFunc(l.handled, func(id string, _ bool) bool { return !carried[id] })
	maps.DeleteFunc(l.answered, func(id string, _ map[string]bool) bool { return !carried[id] })
	maps.DeleteFunc(l.turn, func(p string, _ uint64) bool { _, ok := index[p]; return !ok && !l.busy[p] })
}

func (l *lanes) state(release string) *releaseState {
	st := l.states[release]
	if st == nil {
		st = &releaseState{}
		l.states[release] = st
	}
	return st
}

// current says that a pass begun at now has nothing to do for the release: it was
// reconciled at this assignment (key) under this hold, no sync request asks for it, and its
// periodic reconcile is not due.
func (st *releaseState) current(key string, h hold, now time.Time) bool {
	return st.done == key && st.held == h.key() && h.sync == nil && now.Before(st.due)
}

// holdOf is what holds as back now in generation g (its gates and dependencies), with the
// sync request it answers.
func (a *Agent) holdOf(g *generation, as *desired.Assignment, sync *desired.SyncRequest) hold {
	h := hold{verdict: g.gates.verdict(as.Release, a.clock.Now()), sync: sync}
	h.dependency = a.dependencyWait(as, g.assigned, g.cycles)
	return h
}

// start runs p in a goroutine of its own; it comes back through l.results.
func (l *lanes) start(ctx context.Context, p lanePass) {
	p.states = make(map[string]*releaseState, len(p.releases))
	for _, as := range p.releases {
		p.states[as.Release] = l.state(as.Release)
		l.inFlight[as.Release] = true
	}
	l.busy[p.project] = true
	l.seq++
	l.turn[p.project] = l.seq
	l.a.passes.Add(1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.a.runPass(ctx, p)
		select {
		case l.results <- p:
		case <-ctx.Done():
		}
	}()
}

// finish takes a pass that is over: its project's lane is free, and the requests it
// answered are remembered.
func (l *lanes) finish(p lanePass) {
	delete(l.busy, p.project)
	for _, as := range p.releases {
		delete(l.inFlight, as.Release)
	}
	l.markHandled(p.syncs.done)
	for _, id := range p.syncs.every {
		if l.answered[id] == nil {
			l.answered[id] = map[string]bool{}
		}
		l.answered[id][p.project] = true
	}
	l.a.passes.Add(-1)
}

// settleSyncs acts on the requests no lane answers, and returns the rest: one for a release
// not assigned here is ignored, and one for every release is done once every project's lane
// has answered it (at once on a cluster without releases).
func (l *lanes) settleSyncs(ds *desired.State, pending []*desired.SyncRequest) (rest []*desired.SyncRequest) {
	var done []string
	for _, r := range pending {
		id := r.ID
		switch rel := r.Release; {
		case rel != "" && l.cur.assigned[rel] == nil:
			l.a.log.Info("sync request for a release not assigned to this cluster; ignored", "id", id, "release", rel, "actor", r.Actor)
		case rel != "":
			rest = append(rest, r)
			continue
		case len(ds.Assignments) == 0:
			l.a.log.Info("sync request for every release of a cluster that has none; ignored", "id", id, "actor", r.Actor)
		case slices.ContainsFunc(ds.Assignments, func(as desired.Assignment) bool { return !l.answered[id][projectOf(&as)] }):
			rest = append(rest, r)
			continue
		default:
			delete(l.answered, id)
		}
		done = append(done, id)
	}
	l.markHandled(done)
	return rest
}

func (l *lanes) markHandled(ids []string) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		l.handled[id] = true
	}
	if err := l.a.st.markSyncsHandled(ids); err != nil {
		l.a.log.Error("remember sync requests acted on; they may be acted on again after a restart", "error", err)
	}
}

// runPass reconciles the releases of one lane's pass that need it, one at a time, in order.
func (a *Agent) runPass(ctx context.Context, p lanePass) {
	for _, as := range p.releases {
		st := p.states[as.Release]
		// The clock of this pass moves on: a dependency reconciled a moment ago must not make
		// its dependent miss a window.
		h := a.holdOf(p.g, as, p.syncs.byRelease[as.Release])
		key := p.g.keys[as.Release]
		if st.current(key, h, p.now) {
			continue
		}
		interval := max(as.Interval, time.Second)
		changed := st.done != key
		skip := skipUnchanged(changed, h.sync != nil, st.checked, a.clock.Now(), interval)
		started := a.clock.Now()
		retryIn, reported := a.reconcileOne(ctx, p.g.gen, as, h, changed, skip)
		if ctx.Err() != nil {
			return
		}
		if !skip && reported != "" {
			st.checked = started
		}
		st.done, st.held = key, h.key()
		next := interval
		switch {
		case retryIn > 0:
			next = retryIn // the hub asked to come back later
		case reported == phase.Ready || reported == phase.Waiting:
			st.failures = 0
		default:
			// A failure (API server down, bad input fixed by the next commit) is retried
			// sooner than the drift interval: 2s, 4s, 8s ... up to the interval.
			st.failures++
			next = min(next, retryDelay(st.failures))
		}
		st.due = a.clock.Now().Add(next)
	}
}
