package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// TestScheduleFileSourceRefs: a project's spec.sources bounds every source a release reads a
// file of, not only spec.source. A team's values file or patch file in a source its project
// does not allow refuses the release, naming the field; the platform's own cross-source
// values file, and a team's in a source it may use, are scheduled with the file resolved.
func TestScheduleFileSourceRefs(t *testing.T) {
	t.Parallel()
	clusters := []Cluster{cluster("dev-1", "env", "dev")}
	team := teamA
	team.Spec.Sources = append(append([]string(nil), team.Spec.Sources...), "oci://registry.example.com/team-a/*")
	sources := []v1alpha1.Source{
		{Metadata: v1alpha1.ObjectMeta{Name: "platform-secrets"}, Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/platform-secrets.git"}}},
		{Metadata: v1alpha1.ObjectMeta{Name: "team-a-values"}, Spec: v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/team-a/values.git"}}},
		{Metadata: v1alpha1.ObjectMeta{Name: "team-a-chart"}, Spec: v1alpha1.SourceSpec{Helm: &v1alpha1.HelmSource{Repository: "oci://registry.example.com/team-a", Chart: "web"}}},
		{Metadata: v1alpha1.ObjectMeta{Name: "team-b-chart"}, Spec: v1alpha1.SourceSpec{Helm: &v1alpha1.HelmSource{Repository: "oci://registry.example.com/team-b", Chart: "web"}}},
	}
	arts := map[string]Artifact{"platform": platformArtifact}
	for _, s := range sources {
		arts[s.Metadata.Name] = Artifact{Source: s.Metadata.Name, Revision: "main@sha1:" + s.Metadata.Name, Digest: "sha256:" + s.Metadata.Name}
	}
	values := func(src string) *v1alpha1.ReleaseHelm {
		return &v1alpha1.ReleaseHelm{ValuesFiles: []v1alpha1.FileRef{{Path: "values.yaml"}, {Source: src, Path: "prod/values.yaml"}}}
	}
	patch := func(src string) *v1alpha1.ReleaseHelm {
		return &v1alpha1.ReleaseHelm{PostRender: &v1alpha1.PostRender{Patches: []v1alpha1.PostRenderPatch{{Patch: "kind: ConfigMap\nmetadata: {name: x}\n"}, {Source: src, Path: "patch.yaml"}}}}
	}
	withHelm := func(r v1alpha1.Release, h *v1alpha1.ReleaseHelm) v1alpha1.Release {
		r.Spec.Helm = h
		return r
	}
	const refused = "; not assigned afresh (clusters that had it keep their assignment)"
	const teamSources = "platform, https://git.example.com/team-a/*, oci://registry.example.com/team-a/*"
	tests := []struct {
		name     string
		release  v1alpha1.Release
		want     []string
		file     string // the values or patch file's source in the assignment
		problems []Problem
	}{
		{
			name:    "the platform's cross-source values file",
			release: withHelm(release("baseline"), values("platform-secrets")),
			want:    []string{"baseline"}, file: "platform-secrets",
		},
		{
			name:    "a team's values file in a source its project allows by URL",
			release: withHelm(inProject(release("web"), "team-a", "", "team-a"), values("team-a-values")),
			want:    []string{"web"}, file: "team-a-values",
		},
		{
			name:    "a team's chart source allowed by an oci:// pattern",
			release: withHelm(inProject(release("web"), "team-a", "team-a-chart", "team-a"), values("platform")),
			want:    []string{"web"}, file: "platform",
		},
		{
			name:     "another team's chart source",
			release:  inProject(release("web"), "team-a", "team-b-chart", "team-a"),
			want:     []string{},
			problems: []Problem{{Release: "web", Message: `project team-a does not allow source "team-b-chart" (spec.sources: ` + teamSources + `)` + refused}},
		},
		{
			name:     "a team's values file in the platform's secrets",
			release:  withHelm(inProject(release("web"), "team-a", "", "team-a"), values("platform-secrets")),
			want:     []string{},
			problems: []Problem{{Release: "web", Message: `spec.helm.valuesFiles[1].source: source "platform-secrets" is not among project team-a's sources (spec.sources: ` + teamSources + `)` + refused}},
		},
		{
			name:     "a team's post-render patch file in the platform's secrets",
			release:  withHelm(inProject(release("web"), "team-a", "", "team-a"), patch("platform-secrets")),
			want:     []string{},
			problems: []Problem{{Release: "web", Message: `spec.helm.postRender.patches[1].source: source "platform-secrets" is not among project team-a's sources (spec.sources: ` + teamSources + `)` + refused}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fleet(tt.release)
			f.Projects = []v1alpha1.Project{team}
			f.Sources = append(f.Sources, sources...)
			plan := Schedule(f, clusters, arts, nil, "rev")
			if diff := cmp.Diff(map[string][]string{"dev-1": tt.want}, assigned(plan)); diff != "" {
				t.Errorf("assigned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, plan.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if tt.file != "" {
				h := plan.Assignments["dev-1"][0].Helm
				var got string
				if len(h.ValuesFiles) > 1 {
					got = h.ValuesFiles[1].Source
				}
				if got != tt.file || h.ValuesFiles[1].Digest != arts[tt.file].Digest {
					t.Errorf("values file %+v, want one of source %s at %s", h.ValuesFiles, tt.file, arts[tt.file].Digest)
				}
			}
		})
	}
}
