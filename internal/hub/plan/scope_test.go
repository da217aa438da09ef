package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// scopedFleet is the fleet in force of the scope tests: the platform's ingress and team-a's
// web, each from its own source, and team-a's Project bound to the env=dev clusters.
func scopedFleet() *v1alpha1.Fleet {
	git := func(name, url string) v1alpha1.Source {
		return v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: url, Branch: "main"}}}
	}
	rel := func(name, project, source string) v1alpha1.Release {
		r := release(name, project, "web")
		r.Spec.Source = source
		return r
	}
	return &v1alpha1.Fleet{
		Sources: []v1alpha1.Source{git("platform", "https://git.example.com/platform/infra"), git("team-a", "https://git.example.com/team-a/apps"),
			git("shared", "https://git.example.com/shared/charts")},
		Releases: []v1alpha1.Release{rel("platform-ingress", "", "platform"), rel("a-web", "team-a", "team-a"), rel("a-api", "team-a", "shared"),
			rel("b-api", "team-b", "shared")},
		Projects: []v1alpha1.Project{
			{Metadata: v1alpha1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.ProjectSpec{Sources: []string{"team-a", "shared"},
				ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}},
			{Metadata: v1alpha1.ObjectMeta{Name: "team-b"}, Spec: v1alpha1.ProjectSpec{Sources: []string{"shared"}}},
		},
	}
}

// clone deep-copies a fleet through JSON, as a candidate parsed apart from the fleet in force.
func clone(t *testing.T, f *v1alpha1.Fleet) *v1alpha1.Fleet {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha1.Fleet
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func relIndex(f *v1alpha1.Fleet, name string) int {
	for i, r := range f.Releases {
		if r.Metadata.Name == name {
			return i
		}
	}
	panic(name)
}

// TestCheckCandidate: a caller scoped to team-a may plan a candidate that changes only
// team-a's releases and the revision of a source only team-a reads; every change outside
// them is refused, naming what it may not change.
func TestCheckCandidate(t *testing.T) {
	t.Parallel()
	teamA := Caller{Projects: []string{"team-a"}}
	tests := []struct {
		name   string
		caller Caller
		edit   func(f *v1alpha1.Fleet)
		want   string
	}{
		{name: "unchanged", caller: teamA, edit: func(*v1alpha1.Fleet) {}},
		{name: "own release changed", caller: teamA, edit: func(f *v1alpha1.Fleet) { f.Releases[relIndex(f, "a-web")].Spec.Path = "web2" }},
		{name: "own release added", caller: teamA, edit: func(f *v1alpha1.Fleet) {
			r := f.Releases[relIndex(f, "a-web")]
			r.Metadata.Name = "a-new"
			f.Releases = append(f.Releases, r)
		}},
		{name: "own release removed", caller: teamA, edit: func(f *v1alpha1.Fleet) {
			f.Releases = slices.Delete(f.Releases, relIndex(f, "a-web"), relIndex(f, "a-web")+1)
		}},
		{name: "platform spelled out", caller: teamA, edit: func(f *v1alpha1.Fleet) { f.Releases[relIndex(f, "platform-ingress")].Spec.Project = "platform" }},
		{name: "own source at another branch", caller: teamA, edit: func(f *v1alpha1.Fleet) { f.Sources[1].Spec.Git.Branch = "feature" }},
		{name: "every project's viewer changes Projects", caller: Caller{All: true}, edit: func(f *v1alpha1.Fleet) { f.Projects = nil }},

		{name: "the attack: the platform's release relabelled as team-a's", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Releases[relIndex(f, "platform-ingress")].Spec.Project = "team-a" },
			want: "plan refused: release platform-ingress would move from project platform to team-a: a release may not move into or out of your projects [team-a]"},
		{name: "own release moved out", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Releases[relIndex(f, "a-web")].Spec.Project = "team-b" },
			want: "plan refused: release a-web would move from project team-a to team-b"},
		{name: "Project widened", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Projects[0].Spec.ClusterSelector = v1alpha1.LabelSelector{} },
			want: "plan refused: Project team-a changed: only a caller of every project may plan changes to Projects; your projects are [team-a]"},
		{name: "Project added", caller: teamA,
			edit: func(f *v1alpha1.Fleet) {
				f.Projects = append(f.Projects, v1alpha1.Project{Metadata: v1alpha1.ObjectMeta{Name: "team-c"}})
			},
			want: "plan refused: Project team-c added: only a caller of every project may plan changes to Projects"},
		{name: "Window added", caller: teamA,
			edit: func(f *v1alpha1.Fleet) {
				f.Windows = []v1alpha1.Window{{Metadata: v1alpha1.ObjectMeta{Name: "freeze"}}}
			},
			want: "plan refused: Window freeze added: only a caller of every project may plan changes to Windows"},
		{name: "platform release changed", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Releases[relIndex(f, "platform-ingress")].Spec.Path = "other" },
			want: "plan refused: release platform-ingress is in project platform, outside your projects [team-a]: the candidate changes it"},
		{name: "platform release removed", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Releases = f.Releases[1:] },
			want: "plan refused: release platform-ingress is in project platform, outside your projects [team-a]: the candidate removes it"},
		{name: "release added to another project", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Releases = append(f.Releases, release("b-new", "team-b", "web")) },
			want: "plan refused: release b-new is added in project team-b, outside your projects [team-a]"},
		{name: "a source another project reads", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Sources[2].Spec.Git.Branch = "feature" },
			want: "plan refused: Source shared changed: release b-api of project team-b uses it, outside your projects [team-a]"},
		{name: "own source pointed at the platform's repository", caller: teamA,
			edit: func(f *v1alpha1.Fleet) { f.Sources[1].Spec.Git.URL = "https://git.example.com/platform/infra" },
			want: "plan refused: Source team-a changes its repository, URL or credentials: a caller scoped to projects [team-a] may change only which revision a source follows"},
		{name: "a new source", caller: teamA,
			edit: func(f *v1alpha1.Fleet) {
				f.Sources = append(f.Sources, v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "team-a-steal"},
					Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/platform/infra"}}})
			},
			want: "plan refused: Source team-a-steal is new"},
		{name: "the platform's source read as a values file", caller: teamA,
			edit: func(f *v1alpha1.Fleet) {
				f.Releases[relIndex(f, "a-web")].Spec.Helm = &v1alpha1.ReleaseHelm{ValuesFiles: []v1alpha1.FileRef{{Source: "platform", Path: "values.yaml"}}}
				f.Sources[0].Spec.Git.Branch = "feature"
			},
			want: "plan refused: Source platform changed: release platform-ingress of project platform uses it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cand := clone(t, scopedFleet())
			tt.edit(cand)
			err := CheckCandidate(scopedFleet(), cand, tt.caller)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSourceAllowed: --source NAME=REF only for a source one of the caller's projects may
// use; the built-in platform project may use any.
func TestSourceAllowed(t *testing.T) {
	t.Parallel()
	f := scopedFleet()
	tests := []struct {
		caller Caller
		source string
		want   bool
	}{
		{Caller{Projects: []string{"team-a"}}, "team-a", true},
		{Caller{Projects: []string{"team-a"}}, "shared", true},
		{Caller{Projects: []string{"team-a"}}, "platform", false},
		{Caller{Projects: []string{"team-b"}}, "team-a", false},
		{Caller{Projects: []string{"platform"}}, "team-a", true},
		{Caller{All: true}, "platform", true},
	}
	for _, tt := range tests {
		if got := SourceAllowed(f, tt.caller, tt.source); got != tt.want {
			t.Errorf("%v --source %s: %v, want %v", tt.caller.Projects, tt.source, got, tt.want)
		}
	}
}

// TestComputeScopedByFleetInForce is the attack on Compute: a candidate that relabels the
// platform's releases as team-a's shows a team-a viewer nothing of them, because their
// project is read in the fleet in force; and of team-a's own change, only the clusters it
// may see are named, in groups, variables and problems alike.
func TestComputeScopedByFleetInForce(t *testing.T) {
	t.Parallel()
	inForce := &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}},
		Releases: []v1alpha1.Release{release("web", "", "web"), release("api", "team-a", "api"), release("db", "team-a", "db")},
		Projects: []v1alpha1.Project{{Metadata: v1alpha1.ObjectMeta{Name: "team-a"}, Spec: v1alpha1.ProjectSpec{Sources: []string{"apps"},
			ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}}}
	cand := clone(t, inForce)
	cand.Releases[0].Spec.Project = "team-a" // web is the platform's in force
	cand.Releases[1].Spec.Path = "web2"      // team-a's own change
	// team-a's db, moved to the platform with a path no cluster resolves: scheduled on every
	// cluster, it is a problem on each, and the prod clusters' problems are not the viewer's.
	cand.Releases[2].Spec.Project = ""
	cand.Releases[2].Spec.Path = "{{ .Cluster.Labels.nope }}"
	in := fixture(t, 10, cand)
	in.InForce = inForce
	in.Visible = func(_, project string) bool { return project == "team-a" }
	in.SeesCluster = func(c schedule.Cluster) bool { return c.Labels["env"] == "dev" }
	p, err := Compute(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range p.Groups {
		if g.Release != "api" {
			t.Errorf("a team-a viewer sees release %s, which is the platform's in force", g.Release)
		}
		for _, c := range g.Clusters {
			if c != "c-0001" && c != "c-0003" && c != "c-0005" && c != "c-0007" && c != "c-0009" {
				t.Errorf("group %s names cluster %s, outside the viewer's clusters (env=dev)", g.Release, c)
			}
		}
		for _, o := range g.Objects {
			if strings.Contains(o.Diff, "prod") {
				t.Errorf("group %s shows a prod cluster's variables:\n%s", g.Release, o.Diff)
			}
		}
	}
	var dbProblems int
	for _, pp := range p.Problems {
		for _, c := range []string{"c-0000", "c-0002", "c-0004", "c-0006", "c-0008"} {
			if strings.Contains(pp.Cluster, c) || strings.Contains(pp.Message, c) {
				t.Errorf("problem of release %s names cluster %s, outside the viewer's clusters (env=dev): %s: %s", pp.Release, c, pp.Cluster, pp.Message)
			}
		}
		if pp.Release == "db" {
			dbProblems++
		}
	}
	if dbProblems == 0 {
		t.Errorf("no problem of db's unresolved path on the dev clusters: %+v", p.Problems)
	}
	if got := strings.Join(summary(p), "\n"); got != "api changed x5 added:ConfigMap/web removed:ConfigMap/api" {
		t.Errorf("groups:\n%s\nwant api's change on the 5 dev clusters", got)
	}
	if p.Summary.Clusters != 5 {
		t.Errorf("summary counts %d clusters, want the 5 the viewer sees", p.Summary.Clusters)
	}
}
