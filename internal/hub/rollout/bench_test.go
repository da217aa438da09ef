package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// BenchmarkStep steps a rollout of 1,000 clusters in three waves, in the middle of its second
// wave: what every reschedule costs per release with a rollout.
func BenchmarkStep(b *testing.B) {
	spec := &v1alpha1.Rollout{Waves: []v1alpha1.Wave{
		{Name: "canary", Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "eu", Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
			MaxConcurrent: v1alpha1.IntOrPercent{Value: 25, Percent: true, Set: true}},
		{Name: "rest", MaxConcurrent: v1alpha1.IntOrPercent{Value: 50, Percent: true, Set: true}},
	}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	in := Input{Spec: spec, Newest: art("r2"), Now: now}
	for i := range 1000 {
		c := Cluster{Name: fmt.Sprintf("cluster-%04d", i), Reachable: true, Had: art("r1"), Labels: map[string]string{"region": "us"}}
		switch {
		case i < 10:
			c.Labels = map[string]string{"ring": "canary"}
		case i < 500:
			c.Labels = map[string]string{"region": "eu"}
		}
		in.Clusters = append(in.Clusters, c)
	}
	var st State
	Step(&st, in)
	for i := range in.Clusters[:10] {
		in.Clusters[i].Report = &Report{Digest: art("r2").Digest, Phase: "Ready", At: now}
	}
	in.Now = now.Add(time.Minute)
	Step(&st, in) // the canary is done; eu is under way
	b.ReportAllocs()
	for b.Loop() {
		cp := st
		Step(&cp, in)
	}
}
