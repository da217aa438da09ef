package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
)

// dependencyOrder returns the assignments with every release after the releases it depends
// on (dependsOn), otherwise in their order, so that one pass of the reconcile loop reaches a
// dependency first and its dependents, once it is Ready, in the same pass. Releases on a
// cycle (the hub refuses cycles; a document is still input) come last; cycles maps each of
// them to the cycle it is on, for its status.
func dependencyOrder(assignments []*desired.Assignment) (ordered []*desired.Assignment, cycles map[string]string) {
	index := make(map[string]int, len(assignments))
	for i, as := range assignments {
		index[as.Release] = i
	}
	// waits[i]: the assigned releases i depends on that are not placed yet.
	waits := make([]int, len(assignments))
	dependents := make([][]int, len(assignments))
	for i, as := range assignments {
		seen := map[int]bool{}
		for _, d := range as.DependsOn {
			j, ok := index[d]
			if !ok || seen[j] {
				continue // unassigned: it waits, but for nothing the order can give
			}
			seen[j] = true
			waits[i]++
			dependents[j] = append(dependents[j], i)
		}
	}
	placed := make([]bool, len(assignments))
	ordered = make([]*desired.Assignment, 0, len(assignments))
	// Kahn's algorithm, taking the first ready assignment in document order each time; n is
	// small (a cluster's releases), so the quadratic scan is fine and keeps the order stable.
	for len(ordered) < len(assignments) {
		next := -1
		for i := range assignments {
			if !placed[i] && waits[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			break
		}
		placed[next] = true
		ordered = append(ordered, assignments[next])
		for _, d := range dependents[next] {
			waits[d]--
		}
	}
	for i, as := range assignments {
		if placed[i] {
			continue
		}
		ordered = append(ordered, as)
		if c := cycleThrough(i, assignments, index, placed); c != "" {
			if cycles == nil {
				cycles = map[string]string{}
			}
			cycles[as.Release] = c
		}
	}
	return ordered, cycles
}

// cycleThrough returns `"a" -> "b" -> "a"` when assignment start is on a dependency cycle
// among the unplaced assignments, "" when it only depends on one.
func cycleThrough(start int, assignments []*desired.Assignment, index map[string]int, placed []bool) string {
	// Depth-first search for a path from start back to itself.
	var path []int
	visited := make([]bool, len(assignments))
	var walk func(i int) bool
	walk = func(i int) bool {
		path = append(path, i)
		for _, d := range assignments[i].DependsOn {
			j, ok := index[d]
			if !ok || placed[j] {
				continue
			}
			if j == start {
				return true
			}
			if !visited[j] {
				visited[j] = true
				if walk(j) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if !walk(start) {
		return ""
	}
	names := make([]string, 0, len(path)+1)
	for _, i := range path {
		names = append(names, fmt.Sprintf("%q", assignments[i].Release))
	}
	names = append(names, fmt.Sprintf("%q", assignments[start].Release))
	return strings.Join(names, " -> ")
}

// dependencyWait says what as waits for: the first release it depends on that is not
// assigned to this cluster or not Ready at its current assignment (see ready); "" when
// nothing. Only local state is read, so it holds while the hub is down.
func (a *Agent) dependencyWait(as *desired.Assignment, assigned map[string]*desired.Assignment, cycles map[string]string) string {
	if c, ok := cycles[as.Release]; ok {
		return "dependsOn cycle: " + c
	}
	for _, d := range as.DependsOn {
		dep, ok := assigned[d]
		switch {
		case !ok:
			return fmt.Sprintf("release %q is not assigned to this cluster", d)
		case !a.ready(dep):
			return fmt.Sprintf("release %q is not Ready", d)
		}
	}
	return ""
}

// ready reports whether the release's last reconcile by this agent was Ready, at the
// assignment it has now (not an earlier one, nor one a gate held back in favour of the
// previous revision).
func (a *Agent) ready(as *desired.Assignment) bool {
	k := a.st.release(as.Release).ReadyKey
	return k != "" && k == assignmentKey(as)
}

// assignmentKey identifies an assignment's content and settings: the hash of appliedBytes, so
// that the readiness an agent before the desired model recorded still counts.
func assignmentKey(as *desired.Assignment) string {
	data, err := appliedBytes(as)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
