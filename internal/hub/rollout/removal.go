package rollout

import (
	"fmt"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// StepRemoval moves the removal of a deleted release along the waves of its last rollout
// (st.Spec): a wave's clusters get their tombstones when the wave starts, after the waves
// before it have started and baked, and after its approval when it needs one; pause holds
// it. in.Clusters are the clusters that still hold the release; a cluster is decided zero
// (its tombstone goes out) or its artifact kept, Had. A removal has nothing to report
// health on, so a wave is done once its bake has passed since it started.
//
// The removal is complete (PhaseCompleted) once every wave started and baked; a cluster
// that still holds the release then (it joined a wave that had started) gets its
// tombstone at once.
func StepRemoval(st *State, in Input) Result {
	p := planner{st: st, in: in, now: in.Now, byName: map[string]*Cluster{}}
	if !st.Removing {
		spec := st.Spec
		*st = State{Removing: true, Phase: PhaseProgressing, Spec: spec, Project: st.Project, Clusters: map[string]*ClusterState{},
			StartedAt: in.Now, Events: st.Events, Stable: st.Stable, Current: st.Current}
		p.st.syncWaves(spec)
		p.event(EventStarted, "", "", "removal of the deleted release started: %d clusters, wave by wave", len(in.Clusters))
	}
	if st.Clusters == nil {
		st.Clusters = map[string]*ClusterState{}
	}
	p.waves()
	if st.Spec != nil && (st.Phase == PhaseProgressing || st.Phase == PhaseWaitingApproval) {
		p.removeWaves()
	}
	st.UpdatedAt = in.Now
	out := Result{Assign: make(map[string]Decision, len(in.Clusters))}
	for _, c := range in.Clusters {
		w := p.waveOf[c.Name]
		switch {
		case st.Phase == PhaseCompleted || st.Spec == nil:
			out.Assign[c.Name] = Decision{}
		case w >= 0 && st.Waves[w].Started:
			out.Assign[c.Name] = Decision{}
		case w < 0:
			out.Assign[c.Name] = Decision{Artifact: c.Had, Line: "removal waits until every wave has gone (in no wave)"}
		default:
			line := "removal waits for wave " + st.Spec.Waves[w].Name
			if st.Paused {
				line = "removal paused"
			}
			out.Assign[c.Name] = Decision{Artifact: c.Had, Line: line}
		}
	}
	out.Events = p.events
	if st.Phase == PhaseProgressing && !st.Paused {
		for i, ws := range st.Waves {
			if ws.Started && !ws.Done {
				out.Next = ws.StartedAt.Add(st.Spec.Waves[i].Bake.Duration)
				break
			}
		}
	}
	return out
}

// removeWaves starts the waves of a removal in order.
func (p *planner) removeWaves() {
	st := p.st
	for w, wave := range st.Spec.Waves {
		ws := &st.Waves[w]
		if ws.Done {
			continue
		}
		if !ws.Started {
			if st.Paused {
				st.Message = "removal paused before wave " + wave.Name
				return
			}
			if wave.Approval == v1alpha1.ApprovalRequired && ws.ApprovedBy == "" {
				st.Phase, st.Message = PhaseWaitingApproval, fmt.Sprintf("removal: wave %s waits for approval", wave.Name)
				return
			}
			st.Phase = PhaseProgressing
			ws.Started, ws.StartedAt = true, p.now
			if len(p.members[w]) > 0 {
				p.event(EventWaveStarted, wave.Name, "", "removal: wave %s started: %d clusters", wave.Name, len(p.members[w]))
			}
		}
		if p.now.Before(ws.StartedAt.Add(wave.Bake.Duration)) {
			st.Message = fmt.Sprintf("removal: wave %s bakes until %s", wave.Name, ws.StartedAt.Add(wave.Bake.Duration).UTC().Format(time.RFC3339))
			return
		}
		ws.Done = true
		if len(p.members[w]) > 0 || !ws.StartedAt.Equal(p.now) {
			p.event(EventWaveDone, wave.Name, "", "removal: wave %s done", wave.Name)
		}
	}
	st.Phase, st.Message, st.Paused = PhaseCompleted, "", false
	p.event(EventCompleted, "", "", "removal of the deleted release completed")
}
