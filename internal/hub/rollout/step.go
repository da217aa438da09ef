package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Cluster is one cluster the release selects, as the planner sees it.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Reachable: its agent was heard from recently.
	Reachable bool
	// Blocked says why its gates (windows, freezes, suspensions) hold new revisions of the
	// release back now; "" when nothing does.
	Blocked string
	// Had is the artifact its previous document assigns the release; zero when none.
	Had Artifact
	// Report is its agent's last report for the release; nil when none.
	Report *Report
	// Actor changed its labels since the last step ("" when unknown, or the fleet changed):
	// for a cluster leaving the release, who its tombstone names.
	Actor string
}

// Report is the part of an agent's last report the planner reads.
type Report struct {
	Digest string
	Phase  string // hubclient.Phase values: Ready, Failed, ...
	Health string // kstatus: Current, InProgress, Failed, "" without wait
	At     time.Time
}

// Input is what one Step reads.
type Input struct {
	// Spec is the release's rollout; nil when the release has none. Project is its project.
	Spec    *v1alpha1.Rollout
	Project string
	// Newest is the newest artifact of the release's source; zero when there is none yet.
	Newest Artifact
	// Clusters are the clusters the release selects, in any order.
	Clusters []Cluster
	// Leaving are the clusters that still hold the release (Had) but that its targets no
	// longer select: a relabel, a narrowed selector. They leave wave by wave (Leaving).
	Leaving []Cluster
	Now     time.Time
}

// Decision is what one cluster is assigned.
type Decision struct {
	// Artifact is the one to assign; zero: no assignment (the cluster never had the release
	// and its wave has not started).
	Artifact Artifact
	// Line says, for status, why it is not the newest artifact; "" when it is.
	Line string
	// Actor is, for a cluster of Input.Leaving whose tombstone goes out (zero Artifact),
	// who changed its labels: the tombstone and the audit trail name them.
	Actor string
}

// Result is what one Step decided.
type Result struct {
	// Assign holds a decision for every cluster of the input, Leaving included.
	Assign map[string]Decision
	// Events happened in this step, oldest first.
	Events []phase.RolloutEvent
	// Next is when the rollout should be stepped again by time alone (a bake ends, a
	// deadline passes); zero when nothing is due.
	Next time.Time
}

// Step moves st one step for in and returns what each cluster is assigned. It is
// deterministic: the same state and input give the same result.
func Step(st *State, in Input) Result {
	p := planner{st: st, in: in, now: in.Now, byName: make(map[string]*Cluster, len(in.Clusters))}
	if st.Removing {
		// The release was deleted and has come back: it starts afresh from what the
		// clusters run.
		*st = State{Events: st.Events}
	}
	if in.Spec != nil {
		st.Spec = in.Spec
	}
	st.Project = in.Project
	if st.Clusters == nil {
		st.Clusters = map[string]*ClusterState{}
	}
	for i := range in.Clusters {
		p.byName[in.Clusters[i].Name] = &in.Clusters[i]
	}
	p.waves()
	p.intakeLeaving()
	p.newest()
	p.progress()
	// A rollout that ended here lets the one queued behind it start at once.
	if p.canStartNext() && in.Newest.Digest != "" && in.Newest.Digest != st.Current.Digest {
		p.newest()
		p.progress()
	}
	leaveNext := p.stepLeaving()
	st.UpdatedAt = p.now
	res := Result{Assign: p.assign(), Events: p.events, Next: p.next()}
	for _, c := range in.Leaving {
		res.Assign[c.Name] = p.decideLeaving(c)
	}
	if !leaveNext.IsZero() && (res.Next.IsZero() || leaveNext.Before(res.Next)) {
		res.Next = leaveNext
	}
	return res
}

// planner is one call of Step.
type planner struct {
	st     *State
	in     Input
	now    time.Time
	byName map[string]*Cluster
	// members are the clusters of each wave of st.Spec, in start order.
	members [][]*Cluster
	// waveOf is each cluster's wave index; -1: in no wave.
	waveOf map[string]int
	events []phase.RolloutEvent
	// leaving is the removal from clusters no longer selected as this step left it, even
	// when it ended (st.Leaving is then nil).
	leaving *Leaving
}

func (p *planner) event(typ, wave, cluster, format string, args ...any) {
	p.events = append(p.events, p.st.event(p.now, typ, wave, cluster, fmt.Sprintf(format, args...)))
}

// waves puts every cluster in the first wave whose selector matches it, each wave in the
// order of the stable hash of its clusters' names.
func (p *planner) waves() {
	spec := p.st.Spec
	p.waveOf = make(map[string]int, len(p.in.Clusters))
	if spec == nil {
		return
	}
	p.st.syncWaves(spec)
	type ranked struct {
		c    *Cluster
		rank uint64
	}
	byWave := make([][]ranked, len(spec.Waves))
	for i := range p.in.Clusters {
		c := &p.in.Clusters[i]
		p.waveOf[c.Name] = -1
		for w, wave := range spec.Waves {
			if wave.Selector == nil || wave.Selector.Matches(c.Labels) {
				byWave[w] = append(byWave[w], ranked{c, rank(c.Name)})
				p.waveOf[c.Name] = w
				break
			}
		}
	}
	p.members = make([][]*Cluster, len(spec.Waves))
	for w, m := range byWave {
		slices.SortFunc(m, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.c.Name, b.c.Name)) })
		p.members[w] = make([]*Cluster, len(m))
		for i, r := range m {
			p.members[w][i] = r.c
		}
	}
}

// newest starts a rollout of the newest artifact, queues it, or restarts with it.
func (p *planner) newest() {
	st, n := p.st, p.in.Newest
	if n.Digest == "" || n.Digest == st.Current.Digest || st.Spec == nil {
		if n.Digest == st.Current.Digest && st.Queued.Digest != "" {
			st.Queued = Artifact{} // the source went back to the pinned artifact
		}
		return
	}
	switch {
	case st.Phase == "":
		if p.allHad(n.Digest) {
			// The rollout was added to a release every cluster already runs at its newest.
			st.Phase, st.Current, st.Stable, st.StartedAt = PhaseCompleted, n, n, p.now
			p.st.syncWaves(st.Spec)
			for i := range st.Waves {
				st.Waves[i].Started, st.Waves[i].Done = true, true
			}
			return
		}
		p.start(n, p.mostHad())
	case p.canStartNext():
		stable := st.Stable
		if st.Phase == PhaseCompleted {
			stable = st.Current
		}
		p.start(n, stable)
	case st.Spec.Supersede == v1alpha1.RolloutRestart && st.Phase != PhaseHalted:
		p.event(EventSuperseded, "", "", "rollout of %s superseded by %s", short(st.Current.Revision), short(n.Revision))
		p.start(n, st.Stable)
	case st.Queued.Digest != n.Digest:
		st.Queued = n
		p.event(EventQueued, "", "", "%s queued behind the rollout of %s", short(n.Revision), short(st.Current.Revision))
	}
}

// canStartNext reports whether a newer artifact may start: the rollout ended, or halted and
// its failed clusters went back to the stable artifact.
func (p *planner) canStartNext() bool {
	switch p.st.Phase {
	case PhaseCompleted, PhaseAborted, PhaseRolledBack:
		return true
	case PhaseHalted:
		return p.st.Spec != nil && p.st.Spec.OnFailure == v1alpha1.RolloutRollback
	}
	return false
}

// start begins the rollout of n from the first wave.
func (p *planner) start(n, stable Artifact) {
	st := p.st
	*st = State{
		Phase: PhaseProgressing, Paused: st.Paused, Current: n, Stable: stable, Spec: st.Spec, Project: st.Project,
		Clusters: map[string]*ClusterState{}, StartedAt: p.now, Events: st.Events, Leaving: st.Leaving, Placed: st.Placed,
	}
	st.syncWaves(st.Spec)
	from := ""
	if stable.Revision != "" {
		from = " (stable: " + short(stable.Revision) + ")"
	}
	p.event(EventStarted, "", "", "rollout of %s started%s", short(n.Revision), from)
}

// allHad reports whether every cluster that has the release has it at digest, and one does.
func (p *planner) allHad(digest string) bool {
	seen := false
	for _, c := range p.in.Clusters {
		if c.Had.Digest != "" {
			if c.Had.Digest != digest {
				return false
			}
			seen = true
		}
	}
	return seen
}

// mostHad is the artifact most clusters had before the first rollout: what it falls back to.
func (p *planner) mostHad() Artifact {
	count := map[string]int{}
	var best Artifact
	for _, c := range p.in.Clusters {
		if c.Had.Digest == "" {
			continue
		}
		count[c.Had.Digest]++
		if n := count[c.Had.Digest]; n > count[best.Digest] || (n == count[best.Digest] && c.Had.Digest < best.Digest) {
			best = c.Had
		}
	}
	return best
}

// progress moves the rollout: reads the started clusters' reports, halts past maxFailures,
// starts waves and clusters, completes.
func (p *planner) progress() {
	st := p.st
	if st.Spec == nil || (st.Phase != PhaseProgressing && st.Phase != PhaseWaitingApproval) {
		return
	}
	p.observe()
	for w, m := range p.members {
		for _, c := range m {
			if st.Clusters[c.Name] == nil {
				// Listed from the start, so that a view shows every wave's clusters.
				st.Clusters[c.Name] = &ClusterState{Wave: st.Spec.Waves[w].Name, Phase: ClusterPending}
			}
		}
	}
	for w := range st.Spec.Waves {
		if p.halt(w) {
			return
		}
	}
	for w, wave := range st.Spec.Waves {
		ws := &st.Waves[w]
		if ws.Done {
			if !st.Paused {
				p.startClusters(w) // a cluster that joined a wave already done
			}
			continue
		}
		if !ws.Started {
			if st.Paused {
				st.Message = fmt.Sprintf("paused before wave %s", wave.Name)
				return
			}
			if wave.Approval == v1alpha1.ApprovalRequired && ws.ApprovedBy == "" {
				st.Phase = PhaseWaitingApproval
				st.Message = fmt.Sprintf("wave %s waits for approval", wave.Name)
				return
			}
			st.Phase = PhaseProgressing
			ws.Started, ws.StartedAt = true, p.now
			if len(p.members[w]) > 0 {
				p.event(EventWaveStarted, wave.Name, "", "wave %s started: %d clusters", wave.Name, len(p.members[w]))
			}
		}
		if !st.Paused {
			p.startClusters(w)
		}
		if !p.waveDone(w) {
			st.Message = p.waveMessage(w)
			return
		}
		ws.Done = true
		if len(p.members[w]) > 0 {
			p.event(EventWaveDone, wave.Name, "", "wave %s done%s", wave.Name, p.failedText(w))
		}
	}
	st.Phase, st.Message, st.Paused = PhaseCompleted, "", false
	st.Stable = st.Current
	p.event(EventCompleted, "", "", "rollout of %s completed", short(st.Current.Revision))
}

// observe moves every started cluster along its agent's last report.
func (p *planner) observe() {
	st := p.st
	deadline := st.Spec.ProgressDeadlineOrDefault().Duration
	for name, cs := range st.Clusters {
		c := p.byName[name]
		if c == nil {
			delete(st.Clusters, name) // no longer selected, or removed: out of the rollout
			continue
		}
		if w := p.waveOf[name]; w >= 0 {
			cs.Wave = st.Spec.Waves[w].Name
		}
		switch cs.Phase {
		case ClusterProgressing, ClusterBaking, ClusterSkipped:
		default:
			continue
		}
		// Time held back by a gate (or waiting for an unreachable agent) does not count
		// against the deadline: Since moves forward by it once the hold ends.
		held := c.Blocked != "" || (!c.Reachable && st.Spec.Unreachable == v1alpha1.RolloutWait)
		switch {
		case held && cs.HeldSince.IsZero():
			cs.HeldSince = p.now
		case !held && !cs.HeldSince.IsZero():
			if d := p.now.Sub(maxTime(cs.HeldSince, cs.Since)); d > 0 {
				cs.Since = cs.Since.Add(d)
			}
			cs.HeldSince = time.Time{}
		}
		if !c.Reachable && st.Spec.Unreachable != v1alpha1.RolloutWait && cs.Phase != ClusterSkipped {
			cs.Phase, cs.ReadySince, cs.Message = ClusterSkipped, time.Time{}, "unreachable: passed over; it gets the revision when it is back"
			continue
		}
		if c.Reachable && cs.Phase == ClusterSkipped {
			cs.Phase, cs.Since, cs.Message = ClusterProgressing, p.now, ""
		}
		if cs.Phase == ClusterSkipped {
			continue
		}
		r := c.Report
		at := r != nil && r.Digest == st.Current.Digest
		switch {
		case at && r.Phase == string(hubclient.PhaseFailed):
			p.fail(cs, name, "reported Failed")
		case at && r.Phase == string(hubclient.PhaseReady) && (r.Health == "" || r.Health == "Current"):
			if cs.ReadySince.IsZero() {
				cs.ReadySince = p.now
				if !r.At.IsZero() && r.At.After(cs.Since) && r.At.Before(p.now) {
					cs.ReadySince = r.At
				}
			}
			bake := p.bake(name)
			if !p.now.Before(cs.ReadySince.Add(bake)) {
				cs.Phase, cs.Message = ClusterDone, ""
			} else {
				cs.Phase, cs.Message = ClusterBaking, fmt.Sprintf("baking until %s", cs.ReadySince.Add(bake).UTC().Format(time.RFC3339))
			}
		default:
			cs.Phase, cs.ReadySince = ClusterProgressing, time.Time{}
			cs.Message = ""
			if at && r.Phase == string(hubclient.PhaseReady) {
				cs.Message = "Ready but health " + r.Health
			}
			if c.Blocked != "" {
				cs.Message = c.Blocked
			}
			if !held && !p.now.Before(cs.Since.Add(deadline)) {
				p.fail(cs, name, fmt.Sprintf("not Ready within the progress deadline (%s)", deadline))
			}
		}
	}
}

func (p *planner) fail(cs *ClusterState, name, why string) {
	cs.Phase, cs.ReadySince, cs.Message, cs.Failed = ClusterFailed, time.Time{}, why, true
	p.event(EventFailed, cs.Wave, name, "cluster %s failed at %s: %s", name, short(p.st.Current.Revision), why)
}

func (p *planner) bake(cluster string) time.Duration {
	if w := p.waveOf[cluster]; w >= 0 {
		return p.st.Spec.Waves[w].Bake.Duration
	}
	return 0
}

// halt halts the rollout when wave w has more failures than it allows, and rolls the failed
// clusters back when the rollout says so.
func (p *planner) halt(w int) bool {
	st, wave := p.st, p.st.Spec.Waves[w]
	failed := p.failures(w)
	allowed := p.maxFailures(w)
	if failed <= allowed {
		return false
	}
	st.Phase = PhaseHalted
	st.Message = fmt.Sprintf("halted in wave %s: %d of %d clusters failed (%d allowed)", wave.Name, failed, len(p.members[w]), allowed)
	p.event(EventHalted, wave.Name, "", "%s", st.Message)
	if st.Spec.OnFailure == v1alpha1.RolloutRollback {
		p.rollBack(func(cs *ClusterState) bool { return cs.Phase == ClusterFailed })
	}
	return true
}

// rollBack sends the clusters pick chooses among those that got the pinned artifact back to
// the stable one. Without a stable artifact (the first rollout) they keep what they have.
func (p *planner) rollBack(pick func(*ClusterState) bool) {
	st := p.st
	if st.Stable.Digest == "" {
		st.Message += "; no stable revision to roll back to"
		return
	}
	var names []string
	for name, cs := range st.Clusters {
		if cs.Phase != ClusterPending && cs.Phase != ClusterRolledBack && pick(cs) {
			cs.Phase, cs.Message = ClusterRolledBack, "rolled back to "+short(st.Stable.Revision)
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) > 0 {
		p.event(EventRolledBack, "", "", "%s rolled back to %s", strings.Join(names, ", "), short(st.Stable.Revision))
	}
}

func (p *planner) maxFailures(w int) int {
	return p.st.Spec.Waves[w].MaxFailures.Of(len(p.members[w]), false, v1alpha1.IntOrPercent{})
}

func (p *planner) maxConcurrent(w int) int {
	n := p.st.Spec.Waves[w].MaxConcurrent.Of(len(p.members[w]), true, v1alpha1.IntOrPercent{Value: 100, Percent: true, Set: true})
	return max(n, 1)
}

// count counts wave w's clusters in phase.
func (p *planner) count(w int, phase string) int {
	n := 0
	for _, c := range p.members[w] {
		if cs := p.st.Clusters[c.Name]; cs != nil && cs.Phase == phase {
			n++
		}
	}
	return n
}

// failures counts wave w's clusters that failed, rolled back since or not.
func (p *planner) failures(w int) int {
	n := 0
	for _, c := range p.members[w] {
		if cs := p.st.Clusters[c.Name]; cs != nil && cs.Failed {
			n++
		}
	}
	return n
}

// startClusters starts wave w's pending clusters in hash order, up to maxConcurrent in
// progress, passing over those a gate blocks and those that are unreachable.
func (p *planner) startClusters(w int) {
	st := p.st
	wave := st.Spec.Waves[w]
	busy := p.count(w, ClusterProgressing) + p.count(w, ClusterBaking)
	limit := p.maxConcurrent(w)
	for _, c := range p.members[w] {
		cs := st.Clusters[c.Name]
		if cs != nil && cs.Phase != ClusterPending {
			continue
		}
		if cs == nil {
			cs = &ClusterState{Wave: wave.Name, Phase: ClusterPending}
			st.Clusters[c.Name] = cs
		}
		switch {
		case c.Blocked != "":
			cs.Message, cs.Held = c.Blocked, true
		case !c.Reachable && st.Spec.Unreachable == v1alpha1.RolloutWait:
			cs.Message = "unreachable: the wave waits for it"
		case !c.Reachable:
			cs.Phase, cs.Since, cs.Message = ClusterSkipped, p.now, "unreachable: passed over; it gets the revision when it is back"
		case busy < limit:
			cs.Phase, cs.Since, cs.Message, cs.Held = ClusterProgressing, p.now, "", false
			busy++
		default:
			cs.Message = fmt.Sprintf("waits for a slot (maxConcurrent %d)", limit)
		}
	}
}

// waveDone reports whether every cluster of wave w has finished: done, failed (within
// maxFailures), or passed over.
func (p *planner) waveDone(w int) bool {
	for _, c := range p.members[w] {
		cs := p.st.Clusters[c.Name]
		if cs == nil {
			return false
		}
		switch cs.Phase {
		case ClusterDone, ClusterFailed, ClusterSkipped, ClusterRolledBack:
		default:
			return false
		}
	}
	return true
}

func (p *planner) failedText(w int) string {
	parts := []string{}
	if n := p.failures(w); n > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", n))
	}
	if n := p.count(w, ClusterSkipped); n > 0 {
		parts = append(parts, fmt.Sprintf("%d unreachable, passed over", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// waveMessage says what wave w waits for.
func (p *planner) waveMessage(w int) string {
	name := p.st.Spec.Waves[w].Name
	var blocked []string
	busy := 0
	for _, c := range p.members[w] {
		cs := p.st.Clusters[c.Name]
		switch {
		case cs == nil:
		case cs.Phase == ClusterPending && c.Blocked != "":
			blocked = append(blocked, c.Name+" ("+c.Blocked+")")
		case cs.Phase == ClusterPending && !c.Reachable:
			blocked = append(blocked, c.Name+" (unreachable)")
		case cs.Phase == ClusterProgressing || cs.Phase == ClusterBaking:
			busy++
		}
	}
	switch {
	case p.st.Paused:
		return fmt.Sprintf("paused in wave %s", name)
	case busy == 0 && len(blocked) > 0:
		return fmt.Sprintf("wave %s waits for %s", name, strings.Join(blocked, ", "))
	}
	return fmt.Sprintf("wave %s: %d of %d clusters done", name, p.count(w, ClusterDone), len(p.members[w]))
}

// next is when a bake ends or a deadline passes, the earliest.
func (p *planner) next() time.Time {
	st := p.st
	if st.Spec == nil || (st.Phase != PhaseProgressing && st.Phase != PhaseWaitingApproval) {
		return time.Time{}
	}
	deadline := st.Spec.ProgressDeadlineOrDefault().Duration
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for name, cs := range st.Clusters {
		switch cs.Phase {
		case ClusterBaking:
			earliest(cs.ReadySince.Add(p.bake(name)))
		case ClusterProgressing:
			if cs.HeldSince.IsZero() {
				earliest(cs.Since.Add(deadline))
			}
		}
	}
	return next
}

// assign decides every cluster's artifact.
func (p *planner) assign() map[string]Decision {
	out := make(map[string]Decision, len(p.in.Clusters))
	newest := p.in.Newest.Digest
	for _, c := range p.in.Clusters {
		d := p.decide(c)
		if d.Artifact.Digest == newest || newest == "" {
			d.Line = ""
		}
		out[c.Name] = d
	}
	return out
}

func (p *planner) decide(c Cluster) Decision {
	st := p.st
	cur := short(st.Current.Revision)
	if st.Phase == "" || st.Spec == nil {
		return Decision{Artifact: c.Had}
	}
	if st.Phase == PhaseCompleted {
		return Decision{Artifact: st.Current}
	}
	cs := st.Clusters[c.Name]
	if cs != nil {
		switch cs.Phase {
		case ClusterRolledBack:
			return Decision{Artifact: st.Stable, Line: fmt.Sprintf("rolled back to %s: rollout of %s %s", short(st.Stable.Revision), cur, phaseWords[st.rolloutPhase()])}
		case ClusterProgressing, ClusterBaking, ClusterDone, ClusterFailed, ClusterSkipped:
			line := ""
			if st.Queued.Digest != "" {
				line = fmt.Sprintf("held at %s: %s queued behind its rollout", cur, short(st.Queued.Revision))
			}
			return Decision{Artifact: st.Current, Line: line}
		}
	}
	had := c.Had
	if had.Digest == "" {
		had = st.Stable
	}
	held := short(had.Revision)
	prefix := "held at " + held + ": "
	if held == "" {
		prefix = ""
	}
	var line string
	switch st.Phase {
	case PhaseHalted, PhaseAborted, PhaseRolledBack:
		line = fmt.Sprintf("%srollout of %s %s", prefix, cur, phaseWords[st.Phase])
	default:
		line = p.waitLine(c, cs, held)
	}
	return Decision{Artifact: had, Line: line}
}

// waitLine says what a cluster not started yet waits for.
func (p *planner) waitLine(c Cluster, cs *ClusterState, held string) string {
	st := p.st
	w := p.waveOf[c.Name]
	if w < 0 {
		return fmt.Sprintf("held at %s until the rollout of %s completes (in no wave)", held, short(st.Current.Revision))
	}
	wave := st.Spec.Waves[w]
	prefix := fmt.Sprintf("held at %s: ", held)
	if held == "" {
		prefix = ""
	}
	switch {
	case st.Paused:
		return prefix + "rollout paused"
	case cs != nil && cs.Message != "":
		return prefix + "wave " + wave.Name + ": " + cs.Message
	case st.Waves[w].Started:
		return prefix + "wave " + wave.Name + " in progress"
	}
	for i := w - 1; i >= 0; i-- {
		if !st.Waves[i].Done {
			if st.Phase == PhaseWaitingApproval && !st.Waves[i].Started {
				return prefix + fmt.Sprintf("wave %s waits for %s (approval)", wave.Name, st.Spec.Waves[i].Name)
			}
			return prefix + fmt.Sprintf("wave %s waits for %s", wave.Name, st.Spec.Waves[i].Name)
		}
	}
	if wave.Approval == v1alpha1.ApprovalRequired && st.Waves[w].ApprovedBy == "" {
		return prefix + fmt.Sprintf("wave %s waits for approval", wave.Name)
	}
	return prefix + "wave " + wave.Name + " pending"
}

// phaseWords are the rollout's phases in status lines.
var phaseWords = map[string]string{
	PhaseProgressing: "in progress", PhasePaused: "paused", PhaseWaitingApproval: "waiting for approval",
	PhaseHalted: "halted", PhaseAborted: "aborted", PhaseRolledBack: "rolled back", PhaseCompleted: "completed",
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
