package dashboard

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hubapi"
)

func TestClassify(t *testing.T) {
	ready := hubapi.AssignmentView{Phase: "Ready", DesiredRevision: "main@sha1:b", AppliedRevision: "main@sha1:b", Reachable: true}
	with := func(f func(*hubapi.AssignmentView)) hubapi.AssignmentView { a := ready; f(&a); return a }
	for _, tc := range []struct {
		name string
		a    hubapi.AssignmentView
		want State
	}{
		{"ready at the desired revision", ready, Ready},
		{"an old revision is progressing", with(func(a *hubapi.AssignmentView) { a.AppliedRevision = "main@sha1:a" }), Progressing},
		{"nothing applied yet is progressing", with(func(a *hubapi.AssignmentView) { a.AppliedRevision, a.Phase = "", "Pending" }), Progressing},
		{"the hub's Progressing phase", with(func(a *hubapi.AssignmentView) { a.Phase = "Progressing" }), Progressing},
		{"failed", with(func(a *hubapi.AssignmentView) { a.Phase, a.Error = "Failed", "boom" }), Failed},
		{"an error fails even a Ready phase", with(func(a *hubapi.AssignmentView) { a.Error = "boom" }), Failed},
		{"conflicts", with(func(a *hubapi.AssignmentView) { a.Conflicts = 2 }), Conflicted},
		{"drifted at the desired revision", with(func(a *hubapi.AssignmentView) { a.Drifted = true }), Drifted},
		{"drift on an old revision is still progressing", with(func(a *hubapi.AssignmentView) { a.Drifted, a.AppliedRevision = true, "main@sha1:a" }), Progressing},
		{"unreachable is never ready", with(func(a *hubapi.AssignmentView) { a.Reachable = false }), Unreachable},
		{"unreachable wins over failed", with(func(a *hubapi.AssignmentView) { a.Reachable, a.Phase, a.Error = false, "Failed", "x" }), Unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.a); got != tc.want {
				t.Errorf("Classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	const r1, r2 = "main@sha1:1111111", "main@sha1:2222222"
	st := hubapi.StatusView{
		Fleet: hubapi.FleetStatus{Revision: "main@sha1:f"},
		Assignments: []hubapi.AssignmentView{
			{Release: "web", Cluster: "b", DesiredRevision: r2, AppliedRevision: r2, Phase: "Ready", Reachable: true},
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
		// web                    db                    gone
		{int(Progressing), 0, 1, int(Progressing), 1, -1, int(Ready), 1, 1}, // a
		{int(Ready), 0, 0, 0, -1, -1, 0, -1, -1},                            // b
		{0, -1, -1, 0, -1, -1, 0, -1, -1},                                   // c: nothing assigned
	}
	if diff := cmp.Diff(wantCells, got.Cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	web := got.Summaries[0]
	if web.Release != "web" || web.Assigned != 2 || web.Counts[Ready] != 1 || web.Counts[Progressing] != 1 {
		t.Errorf("web summary = %+v, want 2 assigned: 1 ready, 1 progressing (the removed cluster not counted)", web)
	}
	if diff := cmp.Diff(StateNames[:], got.States); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if got.Sources == nil || got.Problems == nil {
		t.Error("nil sources or problems: the page expects arrays")
	}
}
