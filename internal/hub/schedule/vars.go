package schedule

import (
	"maps"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// clusterVars returns cluster_name and cluster_label_<key> for every label. It must agree with
// the agent's render.ClusterVars, which gives the same variables to "flotilla render": two keys
// that map to the same name ("a.b", "a-b") are resolved by letting the key that sorts last win.
func clusterVars(c Cluster) map[string]string {
	vars := make(map[string]string, len(c.Labels)+1)
	vars[v1alpha1.ClusterNameVariable] = c.Name
	keys := slices.Sorted(maps.Keys(c.Labels))
	for _, k := range keys {
		vars["cluster_label_"+sanitize(k)] = c.Labels[k]
	}
	return vars
}

// mergeVars returns a new map with the cluster's variables and the release's where the
// cluster has none of that name: the cluster wins.
func mergeVars(cluster, release map[string]string) map[string]string {
	vars := make(map[string]string, len(cluster)+len(release))
	for k, v := range release {
		vars[k] = v
	}
	for k, v := range cluster {
		vars[k] = v
	}
	return vars
}

func sanitize(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, key)
}
