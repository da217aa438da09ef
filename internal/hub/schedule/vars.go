package schedule

import "github.com/flotilla/flotilla/api/v1alpha1"

// clusterVars returns the cluster's variables, as the agent's renderer gives them to "flotilla
// render": both call v1alpha1.ClusterVariables.
func clusterVars(c Cluster) map[string]string { return v1alpha1.ClusterVariables(c.Name, c.Labels) }

// mergeVars returns a new map with the cluster's variables and the release's where the
// cluster has none of that name: the cluster wins (v1alpha1.MergeVariables).
func mergeVars(cluster, release map[string]string) map[string]string {
	return v1alpha1.MergeVariables(cluster, release)
}
