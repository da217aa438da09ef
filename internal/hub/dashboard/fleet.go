package dashboard

import (
	"sort"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// State is what one release on one cluster looks like on the dashboard: one code per matrix
// cell, so the page can count, colour and filter 20,000 cells without parsing them. The states
// are the phases `flotilla status` shows (hubclient.Phase*), plus Unassigned.
type State int

// The states, in the order of StateNames.
const (
	// Unassigned: the release is not scheduled on the cluster.
	Unassigned State = iota
	Ready
	Progressing
	Pending
	Failed
	Unreachable
)

// StateNames are the states' names as the page shows them, indexed by State.
var StateNames = [...]string{"unassigned", "ready", "progressing", "pending", "failed", "unreachable"}

func (s State) String() string {
	if s < 0 || int(s) >= len(StateNames) {
		return "unknown"
	}
	return StateNames[s]
}

// Flags mark, beside the state, what the agent's last report found: drift, conflicts and
// health. They are bits of the fourth integer of a cell.
const (
	FlagDrifted    = 1 << iota // objects were changed behind the agent's back
	FlagConflicted             // another field manager or release owns fields the release sets
	// The kstatus health the agent reported, at most one of the three; none without wait.
	FlagHealthCurrent    // every object is Current
	FlagHealthInProgress // some object is not Current yet (InProgress, or any other status)
	FlagHealthFailed     // some object's health is Failed
	// FlagWaiting: something holds the release back on the cluster (phase Waiting, which
	// counts as Progressing, as in the summaries).
	FlagWaiting
)

// Classify maps an assignment's phase (computed by the hub's fleet view, so an unreachable
// cluster is never Ready) to a State and its flags. A phase the page does not know counts as
// Progressing.
func Classify(a hubclient.AssignmentView) (State, int) {
	flags := 0
	if a.Drifted {
		flags |= FlagDrifted
	}
	if a.Conflicts > 0 {
		flags |= FlagConflicted
	}
	if a.Phase == hubclient.PhaseWaiting {
		flags |= FlagWaiting
	}
	switch a.Health {
	case "":
	case "Current":
		flags |= FlagHealthCurrent
	case "Failed":
		flags |= FlagHealthFailed
	default:
		flags |= FlagHealthInProgress
	}
	switch a.Phase {
	case hubclient.PhaseReady:
		return Ready, flags
	case hubclient.PhasePending:
		return Pending, flags
	case hubclient.PhaseFailed:
		return Failed, flags
	case hubclient.PhaseUnreachable:
		return Unreachable, flags
	default:
		return Progressing, flags
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

// CellInts is how many integers one cell takes in Fleet.Cells.
const CellInts = 4

// Fleet is the compact document the dashboard polls: the fleet as a release x cluster matrix
// of small integers plus a table of revisions, about 10 bytes a cell before compression.
// It holds no per-cluster time (no last-seen times, which move with every heartbeat): it
// changes when the fleet does or when the hub re-reads its configuration or polls a source
// (fleet.updatedAt, sources[].checkedAt), so between those an idle dashboard polls for a 304.
type Fleet struct {
	Fleet    hubclient.FleetStatus  `json:"fleet"`
	Sources  []hubclient.SourceView `json:"sources"`
	Problems []string               `json:"problems"`
	// States are the names of the State codes used in Cells.
	States    []string  `json:"states"`
	Releases  []string  `json:"releases"`
	Clusters  []Cluster `json:"clusters"`
	Revisions []string  `json:"revisions"`
	// Cells has one row per cluster (in Clusters' order) of CellInts integers per release
	// (in Releases' order): the State, the index in Revisions of the desired revision and of
	// the applied one (-1 when nothing was applied yet), and the flags. An unassigned release
	// is 0,-1,-1,0.
	Cells [][]int `json:"cells"`
	// Summaries are the per-release counts exactly as `flotilla status` shows them.
	Summaries []hubclient.ReleaseSummary `json:"summaries"`
}

// Build turns the fleet status and the cluster list into the compact document. releases are
// the releases of the fleet configuration in force, in its order; a release that only appears
// in assignments (e.g. removed from the configuration a moment ago) is added after them.
// Clusters are sorted by name.
func Build(st hubclient.StatusView, releases []string, clusters []Cluster) Fleet {
	f := Fleet{
		Fleet: st.Fleet, Sources: st.Sources, Problems: st.Problems,
		States: StateNames[:], Releases: []string{}, Clusters: []Cluster{}, Revisions: []string{},
		Cells: [][]int{}, Summaries: st.Releases,
	}
	if f.Summaries == nil {
		f.Summaries = []hubclient.ReleaseSummary{}
	}
	if f.Sources == nil {
		f.Sources = []hubclient.SourceView{}
	}
	if f.Problems == nil {
		f.Problems = []string{}
	}
	relIdx := map[string]int{}
	addRelease := func(name string) {
		if _, ok := relIdx[name]; !ok {
			relIdx[name] = len(f.Releases)
			f.Releases = append(f.Releases, name)
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
		row := make([]int, CellInts*len(f.Releases))
		for j := range f.Releases {
			row[CellInts*j+1], row[CellInts*j+2] = -1, -1
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
		s, flags := Classify(a)
		c := f.Cells[ci][CellInts*relIdx[a.Release]:]
		c[0], c[1], c[2], c[3] = int(s), rev(a.DesiredRevision), rev(a.AppliedRevision), flags
	}
	return f
}
