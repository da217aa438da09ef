package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/project"
)

// teamA is a project for the cases below: source platform by name, the team's repositories
// by URL, its namespaces, and development clusters only.
var teamA = v1alpha1.Project{
	Metadata: v1alpha1.ObjectMeta{Name: "team-a"},
	Spec: v1alpha1.ProjectSpec{
		Sources:         []string{"platform", "https://git.example.com/team-a/*"},
		ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
		Namespaces:      []string{"team-a", "team-a-*"},
		Kinds:           v1alpha1.ProjectKinds{Deny: []v1alpha1.GroupKind{{Kind: "Secret"}}},
		ServiceAccount:  &v1alpha1.ServiceAccountRef{Namespace: "team-a", Name: "deployer"},
	},
}

var teamARules = project.FromSpec("team-a", teamA.Spec)

func inProject(r v1alpha1.Release, project, source, namespace string) v1alpha1.Release {
	r.Spec.Project, r.Spec.Namespace = project, namespace
	if source != "" {
		r.Spec.Source = source
	}
	return r
}

func TestScheduleProjects(t *testing.T) {
	t.Parallel()
	clusters := []Cluster{cluster("dev-1", "env", "dev"), cluster("prod-1", "env", "prod")}
	projectFleet := func(projects []v1alpha1.Project, releases ...v1alpha1.Release) *v1alpha1.Fleet {
		f := fleet(releases...)
		f.Projects = projects
		f.Sources = append(f.Sources,
			v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "team-a-app"}, Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/team-a/app.git"}}},
			v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "secrets"}, Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/secrets.git"}}},
		)
		return f
	}
	arts := map[string]Artifact{"platform": platformArtifact, "team-a-app": {Source: "team-a-app", Revision: "main@sha1:2222", Digest: "sha256:bbbb"}, "secrets": {Source: "secrets", Revision: "main@sha1:3333", Digest: "sha256:cccc"}}
	narrowPlatform := v1alpha1.Project{Metadata: v1alpha1.ObjectMeta{Name: "platform"}, Spec: v1alpha1.ProjectSpec{Sources: []string{"platform"}, Namespaces: []string{"*"}}}
	narrowRules := project.FromSpec("platform", narrowPlatform.Spec)

	tests := []struct {
		name     string
		fleet    *v1alpha1.Fleet
		previous map[string]desired.Document
		want     map[string][]string
		rules    map[string]*project.Rules // by release, on every cluster it is assigned to
		problems []Problem
	}{
		{
			name:  "a fleet without projects: the platform project, no rules",
			fleet: fleet(release("baseline")),
			want:  map[string][]string{"dev-1": {"baseline"}, "prod-1": {"baseline"}},
			rules: map[string]*project.Rules{"baseline": nil},
		},
		{
			name:  "the project's clusterSelector narrows the targets",
			fleet: projectFleet([]v1alpha1.Project{teamA}, inProject(release("web"), "team-a", "", "team-a")),
			want:  map[string][]string{"dev-1": {"web"}, "prod-1": {}},
			rules: map[string]*project.Rules{"web": &teamARules},
		},
		{
			name:     "never widens them, and says so when nothing is left",
			fleet:    projectFleet([]v1alpha1.Project{teamA}, inProject(release("web", target("env", "prod")), "team-a", "", "team-a")),
			want:     map[string][]string{"dev-1": {}, "prod-1": {}},
			problems: []Problem{{"web", "", "its targets select 1 cluster, and its project's clusterSelector (env=dev) allows none of them; not assigned", ""}},
		},
		{
			name:  "a source allowed by URL pattern",
			fleet: projectFleet([]v1alpha1.Project{teamA}, inProject(release("web"), "team-a", "team-a-app", "team-a-web")),
			want:  map[string][]string{"dev-1": {"web"}, "prod-1": {}},
			rules: map[string]*project.Rules{"web": &teamARules},
		},
		{
			name:     "a source the project does not allow is not scheduled",
			fleet:    projectFleet([]v1alpha1.Project{teamA}, inProject(release("web"), "team-a", "secrets", "team-a"), release("baseline")),
			want:     map[string][]string{"dev-1": {"baseline"}, "prod-1": {"baseline"}},
			problems: []Problem{{"web", "", `project team-a does not allow source "secrets" (spec.sources: platform, https://git.example.com/team-a/*); not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
		{
			name:     "a namespace the project does not allow is not scheduled",
			fleet:    projectFleet([]v1alpha1.Project{teamA}, inProject(release("web"), "team-a", "", "kube-system")),
			want:     map[string][]string{"dev-1": {}, "prod-1": {}},
			problems: []Problem{{"web", "", `project team-a does not allow namespace "kube-system" (spec.namespaces: team-a, team-a-*); not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
		{
			name:  "a refused release keeps what it had, under the project's current rules",
			fleet: projectFleet([]v1alpha1.Project{teamA}, inProject(release("web"), "team-a", "secrets", "team-a")),
			previous: map[string]desired.Document{"dev-1": {Assignments: []desired.Assignment{{Release: "web", Source: "platform", Revision: "main@sha1:0000", Digest: "sha256:0000",
				Project: &project.Rules{Name: "team-a", Namespaces: []string{"*"}}}}}},
			want:     map[string][]string{"dev-1": {"web"}, "prod-1": {}},
			rules:    map[string]*project.Rules{"web": &teamARules},
			problems: []Problem{{"web", "", `project team-a does not allow source "secrets" (spec.sources: platform, https://git.example.com/team-a/*); not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
		{
			name:     "an undefined project",
			fleet:    projectFleet(nil, inProject(release("web"), "team-b", "", "")),
			want:     map[string][]string{"dev-1": {}, "prod-1": {}},
			problems: []Problem{{"web", "", `project "team-b" is not defined; not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
		{
			name:  "a release whose project is not defined keeps the rules it had, never none",
			fleet: projectFleet(nil, inProject(release("web"), "team-b", "", "")),
			previous: map[string]desired.Document{"dev-1": {Assignments: []desired.Assignment{{Release: "web", Source: "platform", Revision: "main@sha1:0000", Digest: "sha256:0000",
				Project: &teamARules}}}},
			want:     map[string][]string{"dev-1": {"web"}, "prod-1": {}},
			rules:    map[string]*project.Rules{"web": &teamARules},
			problems: []Problem{{"web", "", `project "team-b" is not defined; not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
		{
			name:  "a platform project the fleet defines sends its rules",
			fleet: projectFleet([]v1alpha1.Project{narrowPlatform}, release("baseline")),
			want:  map[string][]string{"dev-1": {"baseline"}, "prod-1": {"baseline"}},
			rules: map[string]*project.Rules{"baseline": &narrowRules},
		},
		{
			name:     "and bounds its releases",
			fleet:    projectFleet([]v1alpha1.Project{narrowPlatform}, inProject(release("baseline"), "", "secrets", "")),
			want:     map[string][]string{"dev-1": {}, "prod-1": {}},
			problems: []Problem{{"baseline", "", `project platform does not allow source "secrets" (spec.sources: platform); not assigned afresh (clusters that had it keep their assignment)`, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Schedule(tt.fleet, clusters, arts, tt.previous, "rev")
			if diff := cmp.Diff(tt.want, assigned(plan)); diff != "" {
				t.Errorf("assigned (-want +got):\n%s", diff)
			}
			for c, as := range plan.Assignments {
				for _, a := range as {
					if want, ok := tt.rules[a.Release]; ok {
						if diff := cmp.Diff(want, a.Project); diff != "" {
							t.Errorf("%s on %s: project rules (-want +got):\n%s", a.Release, c, diff)
						}
					}
				}
			}
			if diff := cmp.Diff(tt.problems, plan.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// The project's rules are part of the stored document, and a document without them (stored
// before projects) still decodes.
func TestProjectRulesEncode(t *testing.T) {
	t.Parallel()
	doc := desired.Document{Assignments: []desired.Assignment{{Release: "web", Source: "platform", Project: &teamARules}}}
	data, err := desired.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := desired.DecodeDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&teamARules, got.Assignments[0].Project); diff != "" {
		t.Errorf("rules after a round trip (-want +got):\n%s", diff)
	}
	old, err := desired.DecodeDocument([]byte(`{"assignments":[{"release":"web","source":"platform","url":"","revision":"r","digest":"d","path":"","prune":false,"selfHeal":true,"wait":false,"timeout":0,"interval":0,"vars":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if old.Assignments[0].Project != nil {
		t.Errorf("an old document decodes with rules %+v, want none (the platform project)", old.Assignments[0].Project)
	}
}
