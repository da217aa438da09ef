package rollout

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// View is st as the user API shows it, for spec (the release's rollout; nil when the release
// has none any more). st may be nil: a release that never rolled out.
func View(release string, spec *v1alpha1.Rollout, st *State) phase.RolloutView {
	if st == nil {
		st = &State{}
	}
	if spec == nil {
		spec = st.Spec
	}
	v := phase.RolloutView{
		Release: release, Phase: st.viewPhase(), Message: st.Message, Paused: st.Paused,
		Revision: st.Current.Revision, Digest: st.Current.Digest,
		StableRevision: st.Stable.Revision, StableDigest: st.Stable.Digest,
		QueuedRevision: st.Queued.Revision, QueuedDigest: st.Queued.Digest,
		Waves: []phase.WaveView{}, Events: slices.Clone(st.Events),
		StartedAt: timePtr(st.StartedAt), UpdatedAt: timePtr(st.UpdatedAt), Removal: st.Removing,
	}
	if lv := st.Leaving; lv != nil && lv.Message != "" {
		v.Message = strings.TrimPrefix(v.Message+"; "+lv.Message, "; ")
	}
	if spec == nil {
		return v
	}
	byWave := map[string][]phase.RolloutClusterView{}
	if lv := st.Leaving; lv != nil {
		for name, lc := range lv.Clusters {
			c := phase.RolloutClusterView{Cluster: name, Phase: lc.Phase, Since: timePtr(lc.Since)}
			switch lc.Phase {
			case ClusterPending:
				c.Message = "no longer selected: keeps the release until its wave's removal"
			case ClusterProgressing:
				c.Message = "no longer selected: removed, within the wave's bake"
			default:
				c.Message = "no longer selected: removed"
			}
			byWave[lc.Wave] = append(byWave[lc.Wave], c)
		}
	}
	for name, cs := range st.Clusters {
		if st.Leaving != nil && st.Leaving.Clusters[name] != nil {
			continue // shown as leaving
		}
		rev := st.Current.Revision
		if cs.Phase == ClusterRolledBack {
			rev = st.Stable.Revision
		} else if cs.Phase == ClusterPending {
			rev = ""
		}
		byWave[cs.Wave] = append(byWave[cs.Wave], phase.RolloutClusterView{
			Cluster: name, Phase: cs.Phase, Revision: rev, Message: cs.Message, Since: timePtr(cs.Since),
		})
	}
	for i, w := range spec.Waves {
		ws := WaveState{Name: w.Name}
		if s := st.wave(w.Name); s != nil {
			ws = *s
		}
		cl := byWave[w.Name]
		slices.SortFunc(cl, func(a, b phase.RolloutClusterView) int {
			return cmp.Or(cmp.Compare(rank(a.Cluster), rank(b.Cluster)), strings.Compare(a.Cluster, b.Cluster))
		})
		if cl == nil {
			cl = []phase.RolloutClusterView{}
		}
		wp := wavePhase(st, i, w, ws, cl)
		if st.Leaving != nil && !st.running() && st.Phase != PhaseHalted {
			wp = leavingWavePhase(st.Leaving, w, i)
		}
		wv := phase.WaveView{
			Name: w.Name, Phase: wp, Approval: w.Approval == v1alpha1.ApprovalRequired,
			ApprovedBy: ws.ApprovedBy, MaxConcurrent: w.MaxConcurrent.Of(max(len(cl), 1), true, v1alpha1.IntOrPercent{Value: 100, Percent: true, Set: true}),
			MaxFailures: w.MaxFailures.Of(len(cl), false, v1alpha1.IntOrPercent{}), Clusters: cl,
		}
		wv.MaxConcurrent = max(wv.MaxConcurrent, 1)
		if w.Bake.Duration > 0 {
			wv.Bake = w.Bake.Duration.String()
		}
		for name, cs := range st.Clusters {
			if cs.Wave == w.Name && cs.Failed && slices.ContainsFunc(cl, func(c phase.RolloutClusterView) bool { return c.Cluster == name }) {
				wv.Failures++
			}
		}
		v.Waves = append(v.Waves, wv)
	}
	return v
}

func wavePhase(st *State, i int, w v1alpha1.Wave, ws WaveState, cl []phase.RolloutClusterView) string {
	switch {
	case ws.Done:
		return WaveDone
	case st.Phase == PhaseHalted && ws.Started:
		return WaveHalted
	case ws.Started:
		for _, c := range cl {
			if c.Phase == ClusterProgressing || c.Phase == ClusterBaking {
				return WaveProgressing
			}
		}
		for _, cs := range st.Clusters {
			if cs.Wave == w.Name && cs.Phase == ClusterPending && cs.Held {
				return WaveWaitingWindow
			}
		}
		return WaveProgressing
	case st.Phase == PhaseWaitingApproval && w.Approval == v1alpha1.ApprovalRequired && ws.ApprovedBy == "" && firstPending(st, i):
		return WaveWaitingApproval
	}
	return WavePending
}

// leavingWavePhase is wave w's phase in the removal from clusters no longer selected.
func leavingWavePhase(lv *Leaving, w v1alpha1.Wave, i int) string {
	has := false
	for _, lc := range lv.Clusters {
		has = has || lc.Wave == w.Name
	}
	var ws WaveState
	if i < len(lv.Waves) {
		ws = lv.Waves[i]
	}
	switch {
	case !has || ws.Done:
		return WaveDone
	case ws.Started:
		return WaveProgressing
	case lv.WaitsApproval == w.Name:
		return WaveWaitingApproval
	}
	return WavePending
}

// firstPending reports whether wave i is the first not done.
func firstPending(st *State, i int) bool {
	for j := 0; j < i && j < len(st.Waves); j++ {
		if !st.Waves[j].Done {
			return false
		}
	}
	return true
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
