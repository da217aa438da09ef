package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Leaving is the removal of a release that still exists, with its rollout, from the clusters
// its targets no longer select (a relabel, a narrowed selector): their tombstones go out
// wave by wave, like a revision. It has waves of its own, apart from the rollout's, so that
// a completed rollout does not let a removal through, and its own pause.
//
// A cluster leaves in the wave the rollout last placed it in (its labels before the
// change, as the rollout saw them); a cluster the rollout never placed leaves in the wave
// its labels match now. Within a wave the tombstones go out in the order of the stable
// hash, at most maxConcurrent of the wave's leaving clusters within their bake at once; a
// leaving cluster is done once its wave's bake has passed since its tombstone went out (a
// removal has no health to report). A wave with no cluster leaving does not hold the
// others; one with approval: required waits for it; clusters in no wave go after every
// wave. A cluster that leaves while the removal is under way joins it: at once when its
// wave's turn has come. The removal ends, and is forgotten, once each of its clusters is
// done.
type Leaving struct {
	Waves    []WaveState                `json:"waves,omitempty"`
	Clusters map[string]*LeavingCluster `json:"clusters,omitempty"`
	Paused   bool                       `json:"paused,omitempty"`
	// Message says what the removal waits for.
	Message string `json:"message,omitempty"`
	// WaitsApproval names the wave that waits for its approval; "" none.
	WaitsApproval string    `json:"waitsApproval,omitempty"`
	StartedAt     time.Time `json:"startedAt,omitzero"`
}

// LeavingCluster is one cluster the release leaves.
type LeavingCluster struct {
	// Wave is the wave it leaves in; "" in none.
	Wave string `json:"wave,omitempty"`
	// Phase is ClusterPending (it keeps the release), ClusterProgressing (its tombstone went
	// out, within the wave's bake) or ClusterDone.
	Phase string    `json:"phase"`
	Since time.Time `json:"since,omitzero"`
	// Actor changed the cluster's labels ("" when the fleet's targets changed): the
	// tombstone names them when it goes out.
	Actor string `json:"actor,omitempty"`
}

// intakeLeaving adds the clusters that stopped matching (in.Leaving) to the removal, in the
// wave the rollout last placed them in, and drops those selected again before their
// tombstone went out. It runs before the rollout's step, which forgets unselected clusters.
func (p *planner) intakeLeaving() {
	st := p.st
	if st.Spec == nil {
		st.Leaving = nil
		return
	}
	leaving := make(map[string]bool, len(p.in.Leaving))
	added := 0
	for _, c := range p.in.Leaving {
		leaving[c.Name] = true
		if st.Leaving == nil {
			st.Leaving = &Leaving{Clusters: map[string]*LeavingCluster{}, StartedAt: p.now}
		}
		lv := st.Leaving
		if lv.Clusters == nil {
			lv.Clusters = map[string]*LeavingCluster{}
		}
		if lv.Clusters[c.Name] != nil {
			continue
		}
		lv.Clusters[c.Name] = &LeavingCluster{Wave: p.formerWave(c), Phase: ClusterPending, Actor: c.Actor}
		added++
	}
	p.place()
	if st.Leaving == nil {
		return
	}
	for name, lc := range st.Leaving.Clusters {
		// Selected again: it keeps (or gets back) the release. Gone before its tombstone
		// went out (no longer holds the release, or left the fleet): nothing to remove.
		if p.byName[name] != nil || (lc.Phase == ClusterPending && !leaving[name]) {
			delete(st.Leaving.Clusters, name)
		}
	}
	switch {
	case added > 0 && added == len(st.Leaving.Clusters):
		p.event(EventStarted, "", "", "removal from %d clusters the release no longer selects started, wave by wave", added)
	case added > 0:
		p.event(EventStarted, "", "", "removal: %d more clusters the release no longer selects join it", added)
	}
}

// place records the wave of every cluster the release selects now (State.Placed), and
// forgets the clusters that neither it selects nor are leaving.
func (p *planner) place() {
	st := p.st
	if st.Placed == nil {
		st.Placed = make(map[string]string, len(p.in.Clusters))
	}
	for _, c := range p.in.Clusters {
		w := ""
		if i := p.waveOf[c.Name]; i >= 0 {
			w = st.Spec.Waves[i].Name
		}
		st.Placed[c.Name] = w
	}
	leaving := make(map[string]bool, len(p.in.Leaving))
	for _, c := range p.in.Leaving {
		leaving[c.Name] = true
	}
	for name := range st.Placed {
		if p.byName[name] == nil && !leaving[name] {
			delete(st.Placed, name)
		}
	}
}

// formerWave is the wave c leaves in: the one its labels matched at the last step that
// selected it, else the one they match now.
func (p *planner) formerWave(c Cluster) string {
	spec := p.st.Spec
	if w, ok := p.st.Placed[c.Name]; ok && (w == "" || slices.ContainsFunc(spec.Waves, func(sw v1alpha1.Wave) bool { return sw.Name == w })) {
		return w
	}
	for _, w := range spec.Waves {
		if w.Selector == nil || w.Selector.Matches(c.Labels) {
			return w.Name
		}
	}
	return ""
}

// stepLeaving moves the removal from the clusters no longer selected, and returns when a
// bake ends (zero: nothing due).
func (p *planner) stepLeaving() time.Time {
	st := p.st
	lv := st.Leaving
	p.leaving = lv // what decideLeaving reads, also once the removal ended in this step
	if lv == nil || st.Spec == nil {
		return time.Time{}
	}
	spec := st.Spec
	lv.Waves = syncWaveStates(lv.Waves, spec)
	index := make(map[string]int, len(spec.Waves))
	for i, w := range spec.Waves {
		index[w.Name] = i
	}
	// members[len(spec.Waves)] are the clusters in no wave: they go after every wave.
	members := make([][]string, len(spec.Waves)+1)
	for name, lc := range lv.Clusters {
		w, ok := index[lc.Wave]
		if !ok {
			w = len(spec.Waves)
		}
		members[w] = append(members[w], name)
	}
	for _, m := range members {
		slices.SortFunc(m, func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b)) })
	}
	lv.WaitsApproval, lv.Message = "", ""
	var next time.Time
	for w := range spec.Waves {
		wave, ws, m := spec.Waves[w], &lv.Waves[w], members[w]
		if len(m) == 0 {
			continue // nothing leaves in it: it holds nothing back
		}
		if !ws.Started {
			if wave.Approval == v1alpha1.ApprovalRequired && ws.ApprovedBy == "" {
				// Approvable while paused, as a rollout's wave is.
				lv.WaitsApproval, lv.Message = wave.Name, fmt.Sprintf("removal: wave %s waits for approval", wave.Name)
			}
			if lv.Paused {
				lv.Message = "removal paused before wave " + wave.Name
				return time.Time{}
			}
			if lv.WaitsApproval != "" {
				return time.Time{}
			}
			ws.Started, ws.StartedAt = true, p.now
			p.event(EventWaveStarted, wave.Name, "", "removal: wave %s started: %d clusters no longer selected", wave.Name, len(m))
		}
		next = p.removeClusters(lv, m, wave)
		if !allDone(lv, m) {
			switch {
			case lv.Paused:
				lv.Message = "removal paused in wave " + wave.Name
			default:
				lv.Message = fmt.Sprintf("removal: wave %s: %d of %d clusters done", wave.Name, countPhase(lv, m, ClusterDone), len(m))
			}
			return next
		}
		if !ws.Done {
			ws.Done = true
			p.event(EventWaveDone, wave.Name, "", "removal: wave %s done", wave.Name)
		}
	}
	if m := members[len(spec.Waves)]; len(m) > 0 {
		if lv.Paused {
			lv.Message = "removal paused before the clusters in no wave"
			return time.Time{}
		}
		p.removeClusters(lv, m, v1alpha1.Wave{})
	}
	if len(lv.Clusters) > 0 {
		p.event(EventCompleted, "", "", "removal from %d clusters the release no longer selects completed", len(lv.Clusters))
	}
	st.Leaving = nil // every cluster left, or is selected again
	return time.Time{}
}

// removeClusters sends the tombstones of the pending clusters m (of one wave) in order, at
// most maxConcurrent within their bake, and marks done those whose bake has passed. It
// returns when the earliest bake ends.
func (p *planner) removeClusters(lv *Leaving, m []string, wave v1alpha1.Wave) time.Time {
	bake := wave.Bake.Duration
	limit := max(wave.MaxConcurrent.Of(len(m), true, v1alpha1.IntOrPercent{Value: 100, Percent: true, Set: true}), 1)
	busy := 0
	for _, name := range m {
		lc := lv.Clusters[name]
		if lc.Phase == ClusterProgressing {
			if !p.now.Before(lc.Since.Add(bake)) {
				lc.Phase = ClusterDone
			} else {
				busy++
			}
		}
	}
	for _, name := range m {
		lc := lv.Clusters[name]
		if lc.Phase != ClusterPending || lv.Paused || busy >= limit {
			continue
		}
		lc.Phase, lc.Since = ClusterProgressing, p.now
		if bake <= 0 {
			lc.Phase = ClusterDone
			continue
		}
		busy++
	}
	var next time.Time
	for _, name := range m {
		if lc := lv.Clusters[name]; lc.Phase == ClusterProgressing {
			if end := lc.Since.Add(bake); next.IsZero() || end.Before(next) {
				next = end
			}
		}
	}
	return next
}

func allDone(lv *Leaving, m []string) bool {
	return countPhase(lv, m, ClusterDone) == len(m)
}

func countPhase(lv *Leaving, m []string, phase string) int {
	n := 0
	for _, name := range m {
		if lv.Clusters[name].Phase == phase {
			n++
		}
	}
	return n
}

// decideLeaving is what a cluster no longer selected is assigned: nothing (its tombstone
// goes out, naming who relabelled it) once its turn came, else the artifact it had.
func (p *planner) decideLeaving(c Cluster) Decision {
	lv := p.leaving
	var lc *LeavingCluster
	if lv != nil {
		lc = lv.Clusters[c.Name]
	}
	if lc == nil || lc.Phase != ClusterPending {
		actor := c.Actor
		if lc != nil && lc.Actor != "" {
			actor = lc.Actor
		}
		return Decision{Actor: actor}
	}
	line := "removal waits for wave " + lc.Wave
	switch {
	case lv.Paused:
		line = "removal paused"
	case lc.Wave == "":
		line = "removal waits until every wave has gone (in no wave)"
	default:
		for i, w := range p.st.Spec.Waves {
			if w.Name != lc.Wave || i >= len(lv.Waves) || !lv.Waves[i].Started {
				continue
			}
			n := 0
			for _, o := range lv.Clusters {
				if o.Wave == lc.Wave {
					n++
				}
			}
			limit := max(w.MaxConcurrent.Of(n, true, v1alpha1.IntOrPercent{Value: 100, Percent: true, Set: true}), 1)
			line = fmt.Sprintf("removal: wave %s waits for a slot (maxConcurrent %d)", lc.Wave, limit)
		}
		if lv.WaitsApproval == lc.Wave {
			line = lv.Message
		}
	}
	return Decision{Artifact: c.Had, Line: "no longer selected: " + line}
}
