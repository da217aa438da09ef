package v1alpha1

import (
	"maps"
	"slices"
	"strings"
)

// ClusterLabelVariablePrefix starts the name of the variable each cluster label gives.
const ClusterLabelVariablePrefix = "cluster_label_"

// ClusterVariables returns the substitution variables a cluster contributes:
// [ClusterNameVariable] set to name, and for each label cluster_label_<key> with every character
// of key outside [A-Za-z0-9_] replaced by '_' ("topology.kubernetes.io/region" gives
// cluster_label_topology_kubernetes_io_region).
//
// Two label keys can map to the same variable ("a.b" and "a-b"); the key that sorts last wins,
// so the result does not depend on map iteration order. The hub's scheduler and the agent's
// renderer ("flotilla render") both call this, so a manifest sees the same variables whichever
// resolved them.
func ClusterVariables(name string, labels map[string]string) map[string]string {
	vars := make(map[string]string, len(labels)+1)
	vars[ClusterNameVariable] = name
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		vars[ClusterLabelVariablePrefix+VariableName(k)] = labels[k]
	}
	return vars
}

// MergeVariables returns a new map with a cluster's variables (from [ClusterVariables]) and a
// release's where the cluster has none of that name: the cluster wins every collision, so a
// release can set cluster_label_region only as a default for clusters without the label.
func MergeVariables(cluster, release map[string]string) map[string]string {
	vars := make(map[string]string, len(cluster)+len(release))
	maps.Copy(vars, release)
	maps.Copy(vars, cluster)
	return vars
}

// VariableName turns s into a variable name fragment by replacing every character outside
// [A-Za-z0-9_] with '_'.
func VariableName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, s)
}
