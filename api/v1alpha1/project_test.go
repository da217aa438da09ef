package v1alpha1

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// project returns a Project document named name with spec lines appended.
func project(name, spec string) string {
	return "apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata: {name: " + name + "}\nspec:\n" + spec
}

const teamSpec = "  serviceAccount: {namespace: team-a, name: deployer}\n  namespaces: [team-a]\n  sources: [platform]\n"

// problemsOf returns the problems of err, which must be nil or an *InvalidError.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("want *InvalidError, got %T: %v", err, err)
	}
	var out []string
	for _, p := range invalid.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestParseProjects(t *testing.T) {
	t.Parallel()
	const f, s = "fleet/projects.yaml", "fleet/sources.yaml"
	tests := []struct {
		name string
		docs string // in f, beside platformSource in s
		want []string
	}{
		{
			name: "a valid team project and its release",
			docs: project("team-a", teamSpec+`  clusterSelector: {matchLabels: {env: dev}}
  kinds:
    allow: [{group: rbac.authorization.k8s.io, kind: Role}, {group: "", kind: Namespace}]
    deny: [{group: "*", kind: Secret}]
  fleet: {url: "https://git.example.com/team-a/fleet.git", branch: main, path: fleet, credentials: team-a-ro}
`) + "---\n" + release("web", validSpec+"  project: team-a\n"),
		},
		{
			name: "a release of the built-in platform project needs no Project",
			docs: release("web", validSpec+"  project: platform\n"),
		},
		{
			name: "a fleet may narrow the platform project without a service account",
			docs: project("platform", "  namespaces: ['*']\n  sources: ['*']\n  kinds: {allow: [{group: rbac.authorization.k8s.io, kind: ClusterRole}]}\n"),
		},
		{
			name: "an undefined project",
			docs: project("team-a", teamSpec) + "---\n" + release("web", validSpec+"  project: team-b\n"),
			want: []string{f + ` line 9: Release/web: spec.project: project "team-b" is not defined (projects: team-a, and the built-in platform)`},
		},
		{
			name: "an undefined project without any Project",
			docs: release("web", validSpec+"  project: team-b\n"),
			want: []string{f + ` line 1: Release/web: spec.project: project "team-b" is not defined (the fleet defines no Project; leave spec.project unset for the platform project)`},
		},
		{
			name: "a project that failed to decode is not reported again as undefined",
			docs: project("team-a", teamSpec+"  namespace: [x]\n") + "---\n" + release("web", validSpec+"  project: team-a\n"),
			want: []string{f + ` line 1: Project/team-a: spec.namespace: unknown field "namespace", did you mean "namespaces"?`},
		},
		{
			name: "a team project needs a service account",
			docs: project("team-a", "  namespaces: [team-a]\n"),
			want: []string{f + ` line 1: Project/team-a: spec.serviceAccount: must be set: the agent applies a project's objects as this ServiceAccount (only the platform project may use the agent's own identity)`},
		},
		{
			name: "service account fields",
			docs: project("team-a", "  serviceAccount: {namespace: Team_A}\n"),
			want: []string{
				f + ` line 1: Project/team-a: spec.serviceAccount.namespace: "Team_A" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				f + ` line 1: Project/team-a: spec.serviceAccount.name: must be set`,
			},
		},
		{
			name: "a service account in kube-system",
			docs: project("team-a", "  serviceAccount: {namespace: kube-system, name: deployer}\n  namespaces: [team-a]\n"),
			want: []string{f + ` line 1: Project/team-a: spec.serviceAccount.namespace: "kube-system" refused: kube-* namespaces hold the cluster's own ServiceAccounts (controllers, kube-proxy), which a project must never act as`},
		},
		{
			name: "a service account in another kube-* namespace",
			docs: project("team-a", "  serviceAccount: {namespace: kube-public, name: deployer}\n  namespaces: [team-a]\n"),
			want: []string{f + ` line 1: Project/team-a: spec.serviceAccount.namespace: "kube-public" refused: kube-* namespaces hold the cluster's own ServiceAccounts (controllers, kube-proxy), which a project must never act as`},
		},
		{
			name: "a service account in the agent's namespace",
			docs: project("team-a", "  serviceAccount: {namespace: flotilla-system, name: flotilla-agent}\n  namespaces: [team-a]\n"),
			want: []string{f + ` line 1: Project/team-a: spec.serviceAccount.namespace: "flotilla-system" refused: it is the agent's namespace, whose ServiceAccounts (the agent's own among them) a project must never act as`},
		},
		{
			name: "namespace and source patterns",
			docs: project("team-a", "  serviceAccount: {namespace: team-a, name: deployer}\n  namespaces: [team-a-*, 'Team*', '']\n  sources: ['https://git.example.com/team-a/*', 'ftp://x/*', 'https:///x', 'https://git.example.com/a/../b', 'https://u:p@git.example.com/*', 'team_a*']\n"),
			want: []string{
				f + ` line 1: Project/team-a: spec.sources[1]: URL pattern "ftp://x/*": scheme "ftp" is not a source scheme: want https, http, ssh or file (Git, Helm repositories), or oci (OCI artifacts, Helm charts in a registry)`,
				f + ` line 1: Project/team-a: spec.sources[2]: URL pattern "https:///x" has no host`,
				f + ` line 1: Project/team-a: spec.sources[3]: URL pattern "https://git.example.com/a/../b": ".." segments never match`,
				f + ` line 1: Project/team-a: spec.sources[4]: URL pattern "https://u:p@git.example.com/*": leave credentials out; URLs are matched without them`,
				f + ` line 1: Project/team-a: spec.sources[5]: "team_a*" is neither a source name (a pattern with "*" allowed) nor a URL pattern with "://": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				f + ` line 1: Project/team-a: spec.namespaces[1]: "Team*" is not a namespace name or pattern: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				f + ` line 1: Project/team-a: spec.namespaces[2]: "" is not a namespace name or pattern: must not be empty`,
			},
		},
		{
			name: "kinds",
			docs: project("team-a", teamSpec+"  kinds:\n    allow: [{group: apps/v1, kind: Deployment}, {group: '*'}, {group: rbac.authorization.k8s.io, kind: ClusterRoleBinding}, {kind: 'config-map'}]\n    deny: [{group: 'Not A Group', kind: '*'}]\n"),
			want: []string{
				f + ` line 1: Project/team-a: spec.kinds.allow[0].group: is the group alone, without a version ("apps", not "apps/v1")`,
				f + ` line 1: Project/team-a: spec.kinds.allow[1].kind: must be set: a kind ("Deployment") or "*"`,
				f + ` line 1: Project/team-a: spec.kinds.allow[2]: ClusterRoleBinding cannot be allowed to a project but platform: it grants rights in every namespace`,
				f + ` line 1: Project/team-a: spec.kinds.allow[3].kind: "config-map" is not a kind: want a name such as "Deployment", or "*"`,
				f + ` line 1: Project/team-a: spec.kinds.deny[0].group: "Not A Group" is not an API group: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') ("" is the core group, "*" any group)`,
			},
		},
		{
			name: "tenant fleet settings",
			docs: project("team-a", teamSpec+"  fleet: {url: 'http://git.example.com/team-a.git', path: '../x'}\n") + "---\n" +
				project("platform", "  fleet: {url: 'https://git.example.com/p.git'}\n") + "---\n" +
				project("team-b", "  serviceAccount: {namespace: b, name: b}\n  fleet: {branch: main}\n"),
			want: []string{
				f + ` line 1: Project/team-a: spec.fleet.url: is plain http://: set insecure: true to allow it`,
				f + ` line 1: Project/team-a: spec.fleet.path: path "../x" must not contain ".."`,
				f + ` line 10: Project/platform: spec.fleet: the platform project's configuration is the main fleet; a tenant fleet repository belongs to a team's project`,
				f + ` line 16: Project/team-b: spec.fleet.url: must be set`,
			},
		},
		{
			name: "duplicate projects",
			docs: project("team-a", teamSpec) + "---\n" + project("team-a", teamSpec),
			want: []string{f + ` line 9: Project/team-a: metadata.name: Project "team-a" is already defined earlier in this file`},
		},
		{
			name: "an unknown field of a project suggests the right one",
			docs: project("team-a", teamSpec+"  serviceAcount: {}\n"),
			want: []string{f + ` line 1: Project/team-a: spec.serviceAcount: unknown field "serviceAcount", did you mean "serviceAccount"?`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(map[string][]byte{s: []byte(platformSource), f: []byte(tt.docs)})
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, url string
		want         bool
	}{
		{"https://git.example.com/team-a/*", "https://git.example.com/team-a/app.git", true},
		{"https://git.example.com/team-a/*", "https://GIT.example.com/team-a/app.git", true},
		{"https://git.example.com/team-a/*", "https://user:token@git.example.com/team-a/app.git", true},
		{"https://git.example.com/team-a/*", "https://git.example.com/team-a/sub/app.git", false},
		{"https://git.example.com/team-a/**", "https://git.example.com/team-a/sub/app.git", true},
		{"https://git.example.com/team-a/*", "https://git.example.com/team-b/app.git", false},
		{"https://git.example.com/team-a/*", "https://git.example.com/team-a/../team-b/app.git", false},
		{"https://git.example.com/team-a/*", "https://git.example.com/team-a/app.git?x=1", false},
		{"https://git.example.com/team-a/*", "https://git.example.com/team-a/app.git#main", false},
		{"https://git.example.com/team-a/*", "http://git.example.com/team-a/app.git", false},
		{"https://*.example.com/team-a/*", "https://evil.com/x.example.com/team-a/app.git", false},
		{"https://*.example.com/team-a/*", "https://eu.example.com/team-a/app.git", true},
		{"https://git.example.com/team-a/*", "https://git.example.com.evil.com/team-a/app.git", false},
		{"ssh://git.example.com/team-a/*", "git@git.example.com:team-a/app.git", true},
		{"file:///srv/git/team-a/*", "/srv/git/team-a/app", true},
		{"file:///srv/git/team-a/*", "/srv/git/team-a/../team-b", false},
	}
	for _, tt := range tests {
		if got := MatchURL(tt.pattern, tt.url); got != tt.want {
			t.Errorf("MatchURL(%q, %q) = %v, want %v", tt.pattern, tt.url, got, tt.want)
		}
	}
}

func TestParseTenant(t *testing.T) {
	t.Parallel()
	const f = "tenant/fleet.yaml"
	team := Project{Metadata: ObjectMeta{Name: "team-a"}, Spec: ProjectSpec{
		Sources:        []string{"platform", "https://git.example.com/team-a/*"},
		Namespaces:     []string{"team-a", "team-a-*"},
		ServiceAccount: &ServiceAccountRef{Namespace: "team-a", Name: "deployer"},
		Fleet:          &ProjectFleet{URL: "https://git.example.com/team-a/fleet.git", Credentials: "team-a-ro"},
	}}
	mainSources := []Source{
		{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/platform.git"}}},
		{Metadata: ObjectMeta{Name: "secrets"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/secrets.git"}}},
	}
	taken := map[string]string{"Release/baseline": "the main fleet", "Source/platform": "the main fleet", "Release/api": "project team-b's fleet repository"}
	source := func(name, git string) string {
		return "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: " + name + "}\nspec:\n  git: " + git + "\n"
	}
	tests := []struct {
		name string
		docs string
		want []string
	}{
		{
			name: "its own source and a main fleet source it may use",
			docs: source("app", "{url: 'https://git.example.com/team-a/app.git', credentials: team-a-ro}") + "---\n" +
				release("web", "  source: app\n  namespace: team-a-web\n  targets: [{selector: {}}]\n") + "---\n" +
				release("web2", "  source: platform\n  project: team-a\n  targets: [{selector: {}}]\n"),
		},
		{
			name: "a release of another project",
			docs: release("web", "  source: platform\n  project: team-b\n  targets: [{selector: {}}]\n"),
			want: []string{f + ` line 1: Release/web: spec.project: the release belongs to project "team-b", but this is the fleet repository of project team-a: it may hold only team-a's releases`},
		},
		{
			name: "the platform project's release",
			docs: release("web", "  source: platform\n  project: platform\n  targets: [{selector: {}}]\n"),
			want: []string{f + ` line 1: Release/web: spec.project: the release belongs to project "platform", but this is the fleet repository of project team-a: it may hold only team-a's releases`},
		},
		{
			name: "projects and notifications",
			docs: project("team-c", teamSpec) + "---\n" + "apiVersion: flotilla.dev/v1alpha1\nkind: Notification\nmetadata: {name: chat}\nspec: {type: webhook, url: 'https://hooks.example.com/x'}\n",
			want: []string{
				f + ` line 1: Project/team-c: a tenant fleet repository holds only Sources and Releases of project team-a; Projects are defined in the main fleet`,
				f + ` line 9: Notification/chat: a tenant fleet repository holds only Sources and Releases of project team-a; Notifications are defined in the main fleet`,
			},
		},
		{
			name: "names taken elsewhere",
			docs: source("platform", "{url: 'https://git.example.com/team-a/app.git'}") + "---\n" +
				release("baseline", "  source: platform\n  targets: [{selector: {}}]\n") + "---\n" +
				release("api", "  source: platform\n  targets: [{selector: {}}]\n"),
			want: []string{
				f + ` line 1: Source/platform: metadata.name: Source "platform" is already defined by the main fleet; choose another name`,
				f + ` line 7: Release/baseline: metadata.name: Release "baseline" is already defined by the main fleet; choose another name`,
				f + ` line 14: Release/api: metadata.name: Release "api" is already defined by project team-b's fleet repository; choose another name`,
			},
		},
		{
			name: "sources, credentials and namespaces the project does not allow",
			docs: source("app", "{url: 'https://git.example.com/team-b/app.git', credentials: platform-admin, credentialsFile: /etc/passwd}") + "---\n" +
				release("web", "  source: secrets\n  namespace: kube-system\n  targets: [{selector: {}}]\n"),
			want: []string{
				f + ` line 1: Source/app: spec.git.url: project team-a does not allow this URL: no URL pattern of its spec.sources matches it`,
				f + ` line 1: Source/app: spec.git.credentialsFile: a tenant fleet cannot read files on the hub; name credentials the hub's operator configured`,
				f + ` line 1: Source/app: spec.git.credentials: project team-a does not allow credentials "platform-admin": a tenant's sources may use only the credentials its Project's spec.fleet names`,
				f + ` line 7: Release/web: spec.source: project team-a does not allow source "secrets" (spec.sources)`,
				f + ` line 7: Release/web: spec.namespace: project team-a does not allow namespace "kube-system" (spec.namespaces)`,
			},
		},
		{
			name: "a source defined nowhere",
			docs: release("web", "  source: nowhere\n  targets: [{selector: {}}]\n"),
			want: []string{
				f + ` line 1: Release/web: spec.source: source "nowhere" is not defined`,
				f + ` line 1: Release/web: spec.source: project team-a does not allow source "nowhere" (spec.sources)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fleet, err := ParseTenant(map[string][]byte{f: []byte(tt.docs)}, Tenant{Project: team, Sources: mainSources, Taken: taken})
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if err == nil {
				for _, r := range fleet.Releases {
					if r.Spec.Project != "team-a" {
						t.Errorf("Release/%s: project %q, want team-a", r.Metadata.Name, r.Spec.Project)
					}
				}
			}
		})
	}
}
