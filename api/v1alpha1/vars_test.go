package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClusterVariables(t *testing.T) {
	t.Parallel()
	got := ClusterVariables("eu-1", map[string]string{
		"topology.kubernetes.io/region": "eu",
		"a.b":                           "dot",
		"a-b":                           "dash", // sorts first: "a.b" wins
		"tier":                          "gold",
	})
	want := map[string]string{
		"cluster_name": "eu-1",
		"cluster_label_topology_kubernetes_io_region": "eu",
		"cluster_label_a_b":                           "dot",
		"cluster_label_tier":                          "gold",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ClusterVariables mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeVariables(t *testing.T) {
	t.Parallel()
	cluster := map[string]string{"cluster_name": "eu-1", "cluster_label_region": "eu"}
	release := map[string]string{"cluster_label_region": "default", "cluster_label_zone": "a", "tier": "gold"}
	got := MergeVariables(cluster, release)
	want := map[string]string{"cluster_name": "eu-1", "cluster_label_region": "eu", "cluster_label_zone": "a", "tier": "gold"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeVariables mismatch (-want +got):\n%s", diff)
	}
	if _, ok := cluster["tier"]; ok {
		t.Error("MergeVariables changed its argument")
	}
}

func TestLabelSelectorMatches(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"env": "production", "region": "eu"}
	tests := []struct {
		sel  LabelSelector
		want bool
	}{
		{LabelSelector{}, true},
		{LabelSelector{MatchLabels: map[string]string{}}, true},
		{LabelSelector{MatchLabels: map[string]string{"env": "production"}}, true},
		{LabelSelector{MatchLabels: map[string]string{"env": "production", "region": "eu"}}, true},
		{LabelSelector{MatchLabels: map[string]string{"env": "staging"}}, false},
		{LabelSelector{MatchLabels: map[string]string{"zone": ""}}, false}, // absent is not empty
	}
	for _, tt := range tests {
		if got := tt.sel.Matches(labels); got != tt.want {
			t.Errorf("%v.Matches(%v) = %v, want %v", tt.sel.MatchLabels, labels, got, tt.want)
		}
	}
	if !(LabelSelector{}).Matches(nil) {
		t.Error("the empty selector must match a cluster without labels")
	}
}
