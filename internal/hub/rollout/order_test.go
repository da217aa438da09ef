package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// The order in which clusters are given never changes what Step decides: a reschedule lists
// clusters as the store returns them, and replicas must agree.
func TestStepIgnoresInputOrder(t *testing.T) {
	t.Parallel()
	spec := &v1alpha1.Rollout{Waves: []v1alpha1.Wave{
		{Name: "first", Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"ring": "1"}},
			MaxConcurrent: v1alpha1.IntOrPercent{Value: 30, Percent: true, Set: true}},
		{Name: "rest", MaxConcurrent: v1alpha1.IntOrPercent{Value: 2, Set: true}},
	}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var clusters []Cluster
	for i := range 20 {
		c := Cluster{Name: fmt.Sprintf("c-%02d", i), Reachable: true, Had: art("r1")}
		if i%3 == 0 {
			c.Labels = map[string]string{"ring": "1"}
		}
		clusters = append(clusters, c)
	}
	run := func(cs []Cluster) Result {
		var st State
		return Step(&st, Input{Spec: spec, Newest: art("r2"), Clusters: cs, Now: now})
	}
	want := run(clusters)
	reversed := slices.Clone(clusters)
	slices.Reverse(reversed)
	if diff := cmp.Diff(want, run(reversed)); diff != "" {
		t.Errorf("decisions depend on the clusters' order (-forward +reversed):\n%s", diff)
	}
	started := 0
	for _, d := range want.Assign {
		if d.Artifact.Digest == art("r2").Digest {
			started++
		}
	}
	if started != 3 { // 30% of the 7 clusters of the first wave, rounded up
		t.Errorf("%d clusters started, want 3", started)
	}
}
