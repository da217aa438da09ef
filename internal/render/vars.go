package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// ClusterVars returns the variables a cluster contributes (cluster_name and
// cluster_label_<key>); it is [v1alpha1.ClusterVariables], the function the hub's scheduler uses
// too, so that "flotilla render" and the agent see what the hub assigned.
func ClusterVars(name string, labels map[string]string) map[string]string {
	return v1alpha1.ClusterVariables(name, labels)
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
