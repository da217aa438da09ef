package dashboard

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubapi"
)

// State is what one release on one cluster looks like on the dashboard: a single code per
// matrix cell, so the page can count, colour and filter 20,000 cells without parsing them.
type State int

// The states. A cell shows exactly one; Classify says which wins when several apply.
const (
	// Unassigned: the release is not scheduled on the cluster.
	Unassigned State = iota
	// Ready: applied at the desired revision, healthy, no drift, no conflicts.
	Ready
	// Progressing: not yet at the desired revision (pending, applying, or not reported yet).
	Progressing
	// Drifted: at the desired revision, but objects were changed behind the agent's back.
	Drifted
	// Conflicted: another field manager owns fields the release sets.
	Conflicted
	// Failed: the last apply failed.
	Failed
	// Unreachable: the agent has not been heard from for hub.UnreachableAfter (or never);
	// whatever it reported last is stale.
	Unreachable
)

// StateNames are the states' names as the page shows them, indexed by State.
var StateNames = [...]string{"unassigned", "ready", "progressing", "drifted", "conflicted", "failed", "unreachable"}

func (s State) String() string {
	if s < 0 || int(s) >= len(StateNames) {
		return "unknown"
	}
	return StateNames[s]
}

// Classify reduces an assignment to its State. An unreachable cluster is never shown as
// Ready, whatever it reported last.
func Classify(a hubapi.AssignmentView) State {
	switch {
	case !a.Reachable:
		return Unreachable
	case a.Phase == "Failed" || a.Error != "":
		return Failed
	case a.Conflicts > 0:
		return Conflicted
	case a.AppliedRevision == "" || a.AppliedRevision != a.DesiredRevision || a.Phase != "Ready":
		return Progressing
	case a.Drifted:
		return Drifted
	default:
		return Ready
	}
}

// Cluster is what the dashboard knows of a cluster besides its assignments.
type Cluster struct {
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Reachable bool              `json:"reachable"`
	// Seen: its agent has connected at least once.
	Seen bool `json:"seen"`
}

// Summary counts one release's cells per State; Assigned is their total.
type Summary struct {
	Release  string `json:"release"`
	Assigned int    `json:"assigned"`
	// Counts is indexed by State (Counts[Unassigned] is always 0).
	Counts [len(StateNames)]int `json:"counts"`
}

// Fleet is the compact document the dashboard polls: the fleet as a release x cluster matrix
// of small integers plus a table of revisions, about 15 bytes a cell before compression.
// It holds no time that changes by itself (no last-seen times), so it only changes when the
// fleet does, and its ETag lets an idle dashboard poll for a 304.
type Fleet struct {
	Fleet    hubapi.FleetStatus  `json:"fleet"`
	Sources  []hubapi.SourceView `json:"sources"`
	Problems []string            `json:"problems"`
	// States are the names of the State codes used in Cells.
	States    []string  `json:"states"`
	Releases  []string  `json:"releases"`
	Clusters  []Cluster `json:"clusters"`
	Revisions []string  `json:"revisions"`
	// Cells has one row per cluster (in Clusters' order) of three integers per release (in
	// Releases' order): the State, the index in Revisions of the desired revision and of the
	// applied one (-1 when nothing was applied yet). An unassigned release is 0,-1,-1.
	Cells     [][]int   `json:"cells"`
	Summaries []Summary `json:"summaries"`
}

// Build turns the fleet status and the cluster list into the compact document. releases are
// the releases of the fleet configuration in force, in its order; a release that only appears
// in assignments (e.g. removed from the configuration a moment ago) is added after them.
// Clusters are sorted by name.
func Build(st hubapi.StatusView, releases []string, clusters []Cluster) Fleet {
	f := Fleet{
		Fleet: st.Fleet, Sources: st.Sources, Problems: st.Problems,
		States: StateNames[:], Releases: []string{}, Clusters: []Cluster{}, Revisions: []string{},
		Cells: [][]int{}, Summaries: []Summary{},
	}
	if f.Sources == nil {
		f.Sources = []hubapi.SourceView{}
	}
	if f.Problems == nil {
		f.Problems = []string{}
	}
	relIdx := map[string]int{}
	addRelease := func(name string) {
		if _, ok := relIdx[name]; !ok {
			relIdx[name] = len(f.Releases)
			f.Releases = append(f.Releases, name)
			f.Summaries = append(f.Summaries, Summary{Release: name})
		}
	}
	for _, r := range releases {
		addRelease(r)
	}
	for _, a := range st.Assignments {
		addRelease(a.Release)
	}

	f.Clusters = append(f.Clusters, clusters...)
	sort.Slice(f.Clusters, func(i, j int) bool { return f.Clusters[i].Name < f.Clusters[j].Name })
	clIdx := make(map[string]int, len(f.Clusters))
	for i := range f.Clusters {
		if f.Clusters[i].Labels == nil {
			f.Clusters[i].Labels = map[string]string{}
		}
		clIdx[f.Clusters[i].Name] = i
	}
	f.Cells = make([][]int, len(f.Clusters))
	for i := range f.Cells {
		row := make([]int, 3*len(f.Releases))
		for j := range f.Releases {
			row[3*j+1], row[3*j+2] = -1, -1
		}
		f.Cells[i] = row
	}

	revIdx := map[string]int{}
	rev := func(r string) int {
		if r == "" {
			return -1
		}
		i, ok := revIdx[r]
		if !ok {
			i = len(f.Revisions)
			revIdx[r] = i
			f.Revisions = append(f.Revisions, r)
		}
		return i
	}
	for _, a := range st.Assignments {
		ci, ok := clIdx[a.Cluster]
		if !ok {
			// Removed between the two reads: it will be gone from the next document too.
			continue
		}
		rj := relIdx[a.Release]
		s := Classify(a)
		row := f.Cells[ci]
		row[3*rj], row[3*rj+1], row[3*rj+2] = int(s), rev(a.DesiredRevision), rev(a.AppliedRevision)
		f.Summaries[rj].Assigned++
		f.Summaries[rj].Counts[s]++
	}
	return f
}
