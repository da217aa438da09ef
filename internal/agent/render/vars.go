package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ClusterVars returns the variables a cluster contributes: cluster_name, and for each label
// cluster_label_<key> with every character of key that is not [A-Za-z0-9_] replaced by '_'
// ("topology.kubernetes.io/region" gives cluster_label_topology_kubernetes_io_region).
//
// Two label keys can map to the same variable ("a.b" and "a-b"); the key that sorts last wins,
// so the result does not depend on map iteration order.
func ClusterVars(name string, labels map[string]string) map[string]string {
	vars := make(map[string]string, len(labels)+1)
	vars["cluster_name"] = name
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		vars["cluster_label_"+sanitizeVarName(k)] = labels[k]
	}
	return vars
}

func sanitizeVarName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if isVarChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isVarChar(r rune) bool {
	return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}

// validVarName is Flux's rule for substitution variable names: ^[_[:alpha:]][_[:alpha:][:digit:]]*$.
// Names that envsubst could never reference are rejected rather than silently ignored.
func validVarName(name string) bool {
	if name == "" || ('0' <= name[0] && name[0] <= '9') {
		return false
	}
	for _, r := range name {
		if !isVarChar(r) {
			return false
		}
	}
	return true
}

// checkVars validates variable names and returns the values as Flux uses them: with newlines
// removed, because a value is pasted into YAML text and a newline would change the document's
// structure.
func checkVars(vars map[string]string) (map[string]string, error) {
	if len(vars) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !validVarName(k) {
			return nil, &Error{Err: fmt.Errorf("variable name %q is invalid: must match ^[_a-zA-Z][_a-zA-Z0-9]*$", k)}
		}
		out[k] = strings.ReplaceAll(vars[k], "\n", "")
	}
	return out, nil
}
