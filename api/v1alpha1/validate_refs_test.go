package v1alpha1

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseTenantReferences: a tenant fleet repository's Releases may read files only of
// sources its project allows, and its Helm and OCI Sources are bound like its Git ones: a URL
// the project's patterns allow, only the fleet's credentials, a bounded number of Sources and
// a slower poll than the platform's. (Validation dials nothing; that the hub refuses a
// chart dependency before dialling is TestDependencyHosts, with a listener that counts.)
func TestParseTenantReferences(t *testing.T) {
	t.Parallel()
	const f = "tenant/fleet.yaml"
	const addr = "127.0.0.1:9"
	team := Project{Metadata: ObjectMeta{Name: "team-a"}, Spec: ProjectSpec{
		Sources:        []string{"platform", "https://git.example.com/team-a/*", "https://charts.example.com/team-a/*", "oci://registry.example.com/team-a/**"},
		Namespaces:     []string{"team-a"},
		ServiceAccount: &ServiceAccountRef{Namespace: "flotilla-tenants", Name: "team-a"},
		Fleet:          &ProjectFleet{URL: "https://git.example.com/team-a/fleet.git", Credentials: "team-a-ro"},
	}}
	mainSources := []Source{
		{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/platform.git"}}},
		{Metadata: ObjectMeta{Name: "platform-secrets"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/platform-secrets.git"}}},
	}
	src := func(name, spec string) string {
		return "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: " + name + "}\nspec:\n" + spec + "---\n"
	}
	web := func(helm string) string {
		return release("web", "  source: platform\n  namespace: team-a\n  targets: [{selector: {}}]\n  helm:\n"+helm)
	}
	const sources = "platform, https://git.example.com/team-a/*, https://charts.example.com/team-a/*, oci://registry.example.com/team-a/**"
	tests := []struct {
		name string
		docs string
		want []string
	}{
		{
			name: "values and patch files of sources the project allows",
			docs: src("values", "  git: {url: 'https://git.example.com/team-a/values.git', credentials: team-a-ro}\n") +
				src("chart", "  helm: {repository: 'https://charts.example.com/team-a', chart: web, credentials: team-a-ro}\n  interval: 5m\n") +
				src("bundle", "  oci: {url: 'oci://registry.example.com/team-a/apps/bundle'}\n") +
				web("    valuesFiles: [{path: values.yaml}, {source: values, path: prod.yaml}, {source: platform, path: common.yaml}]\n"+
					"    postRender: {patches: [{source: values, path: patch.yaml}]}\n"),
		},
		{
			name: "a values file of the platform's secrets",
			docs: web("    valuesFiles: [{source: platform-secrets, path: prod/values.yaml}]\n"),
			want: []string{f + ` line 1: Release/web: spec.helm.valuesFiles[0].source: source "platform-secrets" is not among project team-a's sources (spec.sources: ` + sources + `)`},
		},
		{
			name: "a post-render patch file of the platform's secrets",
			docs: web("    postRender: {patches: [{patch: 'kind: ConfigMap\n\n      metadata: {name: x}'}, {source: platform-secrets, path: patch.yaml}]}\n"),
			want: []string{f + ` line 1: Release/web: spec.helm.postRender.patches[1].source: source "platform-secrets" is not among project team-a's sources (spec.sources: ` + sources + `)`},
		},
		{
			name: "a Helm repository no pattern allows",
			docs: src("chart", "  helm: {repository: 'https://"+addr+"/charts', chart: web}\n"),
			want: []string{f + ` line 1: Source/chart: spec.helm.repository: project team-a does not allow chart https://` + addr + `/charts/web: no URL pattern of its spec.sources matches it`},
		},
		{
			name: "a Helm chart of another team's path in the allowed registry",
			docs: src("chart", "  helm: {repository: 'oci://registry.example.com/team-b', chart: web}\n"),
			want: []string{f + ` line 1: Source/chart: spec.helm.repository: project team-a does not allow chart oci://registry.example.com/team-b/web: no URL pattern of its spec.sources matches it`},
		},
		{
			name: "an OCI source at the metadata address",
			docs: src("meta", "  oci: {url: 'oci://169.254.169.254/latest', insecure: true}\n") +
				src("local", "  oci: {url: 'oci://"+addr+"/x'}\n"),
			want: []string{
				f + ` line 1: Source/meta: spec.oci.url: project team-a does not allow this URL: no URL pattern of its spec.sources matches it`,
				f + ` line 7: Source/local: spec.oci.url: project team-a does not allow this URL: no URL pattern of its spec.sources matches it`,
			},
		},
		{
			name: "the platform's credentials",
			docs: src("chart", "  helm: {repository: 'https://charts.example.com/team-a', chart: web, credentials: platform-admin}\n") +
				src("bundle", "  oci: {url: 'oci://registry.example.com/team-a/b', credentials: platform-admin}\n"),
			want: []string{
				f + ` line 1: Source/chart: spec.helm.credentials: project team-a does not allow credentials "platform-admin": a tenant's sources may use only the credentials its Project's spec.fleet names`,
				f + ` line 7: Source/bundle: spec.oci.credentials: project team-a does not allow credentials "platform-admin": a tenant's sources may use only the credentials its Project's spec.fleet names`,
			},
		},
		{
			name: "dependency hosts of its choosing",
			docs: src("chart", "  helm: {repository: 'https://charts.example.com/team-a', chart: web, dependencyHosts: ['169.254.169.254']}\n"),
			want: []string{f + ` line 1: Source/chart: spec.helm.dependencyHosts: a tenant's chart dependencies are fetched from its repository's own host only (or vendored in charts/); only the main fleet may name other hosts`},
		},
		{
			name: "a poll faster than a tenant's minimum",
			docs: src("values", "  git: {url: 'https://git.example.com/team-a/values.git'}\n  interval: 10s\n"),
			want: []string{f + ` line 1: Source/values: spec.interval: must be at least 1m0s in a tenant fleet repository, not 10s`},
		},
	}
	var many strings.Builder
	for i := range MaxTenantSources + 1 {
		many.WriteString(src(fmt.Sprintf("s%d", i), fmt.Sprintf("  git: {url: 'https://git.example.com/team-a/r%d.git'}\n", i)))
	}
	tests = append(tests, struct {
		name string
		docs string
		want []string
	}{
		name: "more Sources than a tenant may define",
		docs: many.String(),
		want: []string{fmt.Sprintf("%s line %d: Source/s20: a tenant fleet repository may define at most 20 Sources; this is Source number 21", f, 1+6*MaxTenantSources)},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTenant(map[string][]byte{f: []byte(tt.docs)}, Tenant{Project: team, Sources: mainSources})
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDependencyHostsValidation: spec.helm.dependencyHosts are host names, host:port or
// *.domain; a URL or a path is refused, naming the entry.
func TestDependencyHostsValidation(t *testing.T) {
	t.Parallel()
	const f = "fleet.yaml"
	doc := "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: chart}\nspec:\n  helm: {repository: 'https://charts.example.com', chart: web, dependencyHosts: [charts.bitnami.com, 'host:8443', '*.example.com', 'https://evil/', 'a*b']}\n"
	_, err := Parse(map[string][]byte{f: []byte(doc)})
	want := []string{
		f + ` line 1: Source/chart: spec.helm.dependencyHosts[3]: "https://evil/": want a host name, host:port or *.domain`,
		f + ` line 1: Source/chart: spec.helm.dependencyHosts[4]: "a*b": want a host name, host:port or *.domain`,
	}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
