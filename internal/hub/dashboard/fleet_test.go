package dashboard

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		a         hubclient.AssignmentView
		want      State
		wantFlags int
	}{
		{"ready", hubclient.AssignmentView{Phase: hubclient.PhaseReady}, Ready, 0},
		{"ready but drifted", hubclient.AssignmentView{Phase: hubclient.PhaseReady, Drifted: true}, Ready, FlagDrifted},
		{"failed with conflicts", hubclient.AssignmentView{Phase: hubclient.PhaseFailed, Conflicts: 2}, Failed, FlagConflicted},
		{"pending", hubclient.AssignmentView{Phase: hubclient.PhasePending}, Pending, 0},
		{"progressing", hubclient.AssignmentView{Phase: hubclient.PhaseProgressing}, Progressing, 0},
		{"unreachable, drifted when last heard of", hubclient.AssignmentView{Phase: hubclient.PhaseUnreachable, Drifted: true, Conflicts: 1}, Unreachable, FlagDrifted | FlagConflicted},
		{"a phase the page does not know", hubclient.AssignmentView{Phase: "Applying"}, Progressing, 0},
		{"ready and healthy", hubclient.AssignmentView{Phase: hubclient.PhaseReady, Health: "Current"}, Ready, FlagHealthCurrent},
		{"ready, objects still progressing", hubclient.AssignmentView{Phase: hubclient.PhaseReady, Health: "InProgress"}, Ready, FlagHealthInProgress},
		{"failed health", hubclient.AssignmentView{Phase: hubclient.PhaseFailed, Health: "Failed", Drifted: true}, Failed, FlagDrifted | FlagHealthFailed},
		{"a health the page does not know is not healthy", hubclient.AssignmentView{Phase: hubclient.PhaseReady, Health: "Terminating"}, Ready, FlagHealthInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, flags := Classify(tc.a)
			if got != tc.want || flags != tc.wantFlags {
				t.Errorf("Classify = %s, %b; want %s, %b", got, flags, tc.want, tc.wantFlags)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	const r1, r2 = "main@sha1:1111111", "main@sha1:2222222"
	st := hubclient.StatusView{
		Fleet:    hubclient.FleetStatus{Revision: "main@sha1:f"},
		Releases: []hubclient.ReleaseSummary{{Release: "web", Clusters: 3, Ready: 1, Progressing: 1, Pending: 1}},
		Assignments: []hubclient.AssignmentView{
			{Release: "web", Cluster: "b", DesiredRevision: r2, AppliedRevision: r2, Phase: "Ready", Drifted: true, Reachable: true},
			{Release: "web", Cluster: "a", DesiredRevision: r2, AppliedRevision: r1, Phase: "Progressing", Reachable: true},
			{Release: "db", Cluster: "a", DesiredRevision: r1, Phase: "Pending", Reachable: true},
			{Release: "gone", Cluster: "a", DesiredRevision: r1, AppliedRevision: r1, Phase: "Ready", Reachable: true},
			{Release: "web", Cluster: "removed", DesiredRevision: r2, Phase: "Pending"},
		},
	}
	clusters := []Cluster{
		{Name: "c", Labels: nil, Seen: false},
		{Name: "b", Labels: map[string]string{"env": "prod"}, Reachable: true, Seen: true},
		{Name: "a", Labels: map[string]string{"env": "staging"}, Reachable: true, Seen: true},
	}
	got := Build(st, []string{"web", "db"}, clusters)

	if diff := cmp.Diff([]string{"web", "db", "gone"}, got.Releases); diff != "" {
		t.Errorf("releases: configured ones first, then those only assigned (-want +got):\n%s", diff)
	}
	names := []string{}
	for _, c := range got.Clusters {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" {
		t.Errorf("clusters sorted by name (-want +got):\n%s", diff)
	}
	if got.Clusters[2].Labels == nil {
		t.Error("a cluster without labels has nil labels; the page expects an object")
	}
	if diff := cmp.Diff([]string{r2, r1}, got.Revisions); diff != "" {
		t.Errorf("revision table (-want +got):\n%s", diff)
	}
	wantCells := [][]int{
		// web                            db                         gone
		{int(Progressing), 0, 1, 0, int(Pending), 1, -1, 0, int(Ready), 1, 1, 0}, // a
		{int(Ready), 0, 0, FlagDrifted, 0, -1, -1, 0, 0, -1, -1, 0},              // b
		{0, -1, -1, 0, 0, -1, -1, 0, 0, -1, -1, 0},                               // c: nothing assigned
	}
	if diff := cmp.Diff(wantCells, got.Cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(st.Releases, got.Summaries); diff != "" {
		t.Errorf("summaries are the status view's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(StateNames[:], got.States); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got.Sources == nil || got.Problems == nil {
		t.Error("nil sources or problems: the page expects arrays")
	}
}
