package schedule

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
)

var platformArtifact = Artifact{
	Source:   "platform",
	URL:      "https://hub.example.com/artifacts/sha256:aaaa",
	Revision: "main@sha1:1111",
	Digest:   "sha256:aaaa",
}

var artifacts = map[string]Artifact{"platform": platformArtifact}

// release returns a Release of source "platform" with the given targets (none given: one
// empty selector, matching every cluster).
func release(name string, targets ...v1alpha1.Target) v1alpha1.Release {
	if targets == nil {
		targets = []v1alpha1.Target{{}}
	}
	return v1alpha1.Release{
		APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRelease,
		Metadata: v1alpha1.ObjectMeta{Name: name},
		Spec:     v1alpha1.ReleaseSpec{Source: "platform", Path: name, Targets: targets},
	}
}

func withPath(r v1alpha1.Release, path string) v1alpha1.Release {
	r.Spec.Path = path
	return r
}

func withVars(r v1alpha1.Release, vars map[string]string) v1alpha1.Release {
	r.Spec.Variables = vars
	return r
}

// target selects clusters with the given label pairs: target("env", "prod", "tier", "1").
func target(kv ...string) v1alpha1.Target {
	t := v1alpha1.Target{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{}}}
	for i := 0; i < len(kv); i += 2 {
		t.Selector.MatchLabels[kv[i]] = kv[i+1]
	}
	return t
}

func fleet(releases ...v1alpha1.Release) *v1alpha1.Fleet {
	return &v1alpha1.Fleet{
		Sources: []v1alpha1.Source{{
			Metadata: v1alpha1.ObjectMeta{Name: "platform"},
			Spec:     v1alpha1.SourceSpec{Git: &v1alpha1.GitSource{URL: "https://git.example.com/platform.git"}},
		}},
		Releases: releases,
	}
}

func cluster(name string, kv ...string) Cluster {
	c := Cluster{Name: name, Labels: map[string]string{}}
	for i := 0; i < len(kv); i += 2 {
		c.Labels[kv[i]] = kv[i+1]
	}
	return c
}

// assigned is a cluster's releases, the part of a plan most cases care about.
func assigned(p Plan) map[string][]string {
	out := make(map[string][]string, len(p.Assignments))
	for c, as := range p.Assignments {
		out[c] = []string{}
		for _, a := range as {
			out[c] = append(out[c], a.Release)
		}
	}
	return out
}

func TestScheduleMatching(t *testing.T) {
	t.Parallel()
	clusters := []Cluster{
		cluster("prod-eu", "env", "production", "region", "eu"),
		cluster("prod-us", "env", "production", "region", "us", "tier", "1"),
		cluster("staging", "env", "staging", "region", "eu"),
		cluster("bare"),
	}
	tests := []struct {
		name  string
		fleet *v1alpha1.Fleet
		want  map[string][]string
	}{
		{
			name:  "empty selector matches every cluster",
			fleet: fleet(release("all", target())),
			want:  map[string][]string{"prod-eu": {"all"}, "prod-us": {"all"}, "staging": {"all"}, "bare": {"all"}},
		},
		{
			name:  "one label",
			fleet: fleet(release("prod", target("env", "production"))),
			want:  map[string][]string{"prod-eu": {"prod"}, "prod-us": {"prod"}, "staging": {}, "bare": {}},
		},
		{
			name:  "every label of a selector must match",
			fleet: fleet(release("prod-eu", target("env", "production", "region", "eu"))),
			want:  map[string][]string{"prod-eu": {"prod-eu"}, "prod-us": {}, "staging": {}, "bare": {}},
		},
		{
			name:  "a label with another value does not match",
			fleet: fleet(release("tier2", target("tier", "2"))),
			want:  map[string][]string{"prod-eu": {}, "prod-us": {}, "staging": {}, "bare": {}},
		},
		{
			name:  "any of several targets matches",
			fleet: fleet(release("mixed", target("env", "staging"), target("tier", "1"))),
			want:  map[string][]string{"prod-eu": {}, "prod-us": {"mixed"}, "staging": {"mixed"}, "bare": {}},
		},
		{
			name:  "a release without targets matches nothing",
			fleet: fleet(release("none", []v1alpha1.Target{}...)),
			want:  map[string][]string{"prod-eu": {}, "prod-us": {}, "staging": {}, "bare": {}},
		},
		{
			name: "assignments are sorted by release",
			fleet: fleet(
				release("zeta", target("region", "eu")),
				release("alpha", target("region", "eu")),
				release("mid", target("env", "production")),
			),
			want: map[string][]string{"prod-eu": {"alpha", "mid", "zeta"}, "prod-us": {"mid"}, "staging": {"alpha", "zeta"}, "bare": {}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Schedule(tt.fleet, clusters, artifacts, nil, "r1")
			if diff := cmp.Diff(tt.want, assigned(p)); diff != "" {
				t.Errorf("assignments mismatch (-want +got):\n%s", diff)
			}
			if len(p.Problems) > 0 {
				t.Errorf("unexpected problems: %v", p.Problems)
			}
		})
	}
}

func TestScheduleAssignment(t *testing.T) {
	t.Parallel()
	defaults := withPath(release("defaults"), "")
	set := release("set")
	set.Spec.Namespace = "platform-system"
	set.Spec.CreateNamespace = true
	set.Spec.Prune = true
	set.Spec.Wait = true
	set.Spec.SelfHeal = new(false)
	set.Spec.Timeout = v1alpha1.Duration{Duration: time.Minute}
	set.Spec.Interval = v1alpha1.Duration{Duration: time.Hour}
	set.Spec.Variables = map[string]string{"replicas": "3"}

	p := Schedule(fleet(defaults, set), []Cluster{cluster("eu-1", "topology.kubernetes.io/region", "eu")}, artifacts, nil, "r1")
	clusterVars := map[string]string{"cluster_name": "eu-1", "cluster_label_topology_kubernetes_io_region": "eu"}
	want := Plan{Assignments: map[string][]desired.Assignment{"eu-1": {
		{
			Release: "defaults", Source: "platform",
			URL: platformArtifact.URL, Revision: platformArtifact.Revision, Digest: platformArtifact.Digest,
			Path: "", SelfHeal: true, Timeout: 5 * time.Minute, Interval: 10 * time.Minute,
			Vars: clusterVars,
		},
		{
			Release: "set", Source: "platform",
			URL: platformArtifact.URL, Revision: platformArtifact.Revision, Digest: platformArtifact.Digest,
			Path: "set", Namespace: "platform-system", CreateNamespace: true,
			Prune: true, SelfHeal: false, Wait: true, Timeout: time.Minute, Interval: time.Hour,
			Vars: map[string]string{"cluster_name": "eu-1", "cluster_label_topology_kubernetes_io_region": "eu", "replicas": "3"},
		},
	}}, Removed: map[string][]desired.Tombstone{}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("plan mismatch (-want +got):\n%s", diff)
	}
}

func TestSchedulePaths(t *testing.T) {
	t.Parallel()
	byRegion := withPath(release("baseline"), "clusters/{{ .Cluster.Labels.region }}/baseline")
	prev := func(path string) map[string][]desired.Assignment {
		return map[string][]desired.Assignment{"c": {{Release: "baseline", Revision: "main@sha1:0000", Path: path, Vars: map[string]string{"cluster_name": "c"}}}}
	}
	tests := []struct {
		name     string
		release  v1alpha1.Release
		cluster  Cluster
		previous map[string][]desired.Assignment
		wantPath []string // paths of the cluster's assignments
		wantRev  []string
		problems []Problem
	}{
		{
			name:     "templated per region",
			release:  byRegion,
			cluster:  cluster("c", "region", "eu"),
			wantPath: []string{"clusters/eu/baseline"},
			wantRev:  []string{platformArtifact.Revision},
		},
		{
			name:     "cluster name",
			release:  withPath(release("baseline"), "clusters/{{ .Cluster.Name }}"),
			cluster:  cluster("c"),
			wantPath: []string{"clusters/c"},
			wantRev:  []string{platformArtifact.Revision},
		},
		{
			name:     "label with index",
			release:  withPath(release("baseline"), `zones/{{ index .Cluster.Labels "topology.kubernetes.io/zone" }}`),
			cluster:  cluster("c", "topology.kubernetes.io/zone", "eu-1a"),
			wantPath: []string{"zones/eu-1a"},
			wantRev:  []string{platformArtifact.Revision},
		},
		{
			name:     "path is cleaned",
			release:  withPath(release("baseline"), "clusters//{{ .Cluster.Labels.region }}/./"),
			cluster:  cluster("c", "region", "eu"),
			wantPath: []string{"clusters/eu"},
			wantRev:  []string{platformArtifact.Revision},
		},
		{
			name:     "missing label: problem and no assignment",
			release:  byRegion,
			cluster:  cluster("c", "env", "production"),
			wantPath: []string{},
			wantRev:  []string{},
			problems: []Problem{{"baseline", "c", `template: path:1:20: executing "path" at <.Cluster.Labels.region>: map has no entry for key "region"; not assigned`, ""}},
		},
		{
			name:     "missing label with a previous assignment keeps it",
			release:  byRegion,
			cluster:  cluster("c", "env", "production"),
			previous: prev("clusters/eu/baseline"),
			wantPath: []string{"clusters/eu/baseline"},
			wantRev:  []string{"main@sha1:0000"},
			problems: []Problem{{"baseline", "c", `template: path:1:20: executing "path" at <.Cluster.Labels.region>: map has no entry for key "region"; kept the previous assignment (revision main@sha1:0000)`, ""}},
		},
		{
			name:     "a cluster name cannot lead out of the source",
			release:  withPath(release("baseline"), "{{ .Cluster.Name }}/x"),
			cluster:  cluster(".."),
			wantPath: []string{},
			wantRev:  []string{},
			problems: []Problem{{"baseline", "..", `path "../x" leaves the source: it must not contain ".."; not assigned`, ""}},
		},
		{
			name:     "template that does not parse (fleet not validated)",
			release:  withPath(release("baseline"), "{{ .Cluster.Name"),
			cluster:  cluster("c"),
			previous: prev("old"),
			wantPath: []string{"old"},
			wantRev:  []string{"main@sha1:0000"},
			problems: []Problem{{"baseline", "c", "template: path:1: unclosed action; kept the previous assignment (revision main@sha1:0000)", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Schedule(fleet(tt.release), []Cluster{tt.cluster}, artifacts, assignmentsOnly(tt.previous), "r1")
			paths, revs := []string{}, []string{}
			for _, a := range p.Assignments[tt.cluster.Name] {
				paths = append(paths, a.Path)
				revs = append(revs, a.Revision)
			}
			if diff := cmp.Diff(tt.wantPath, paths); diff != "" {
				t.Errorf("paths mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRev, revs); diff != "" {
				t.Errorf("revisions mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, p.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScheduleVars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		release  v1alpha1.Release
		cluster  Cluster
		want     map[string]string
		problems []Problem
	}{
		{
			name:    "cluster and release variables",
			release: withVars(release("r"), map[string]string{"replicas": "3"}),
			cluster: cluster("c", "region", "eu", "topology.kubernetes.io/zone", "eu-1a"),
			want: map[string]string{
				"cluster_name": "c", "cluster_label_region": "eu",
				"cluster_label_topology_kubernetes_io_zone": "eu-1a", "replicas": "3",
			},
		},
		{
			name:     "a release cannot override cluster_name",
			release:  withVars(release("r"), map[string]string{"cluster_name": "other"}),
			cluster:  cluster("c"),
			want:     map[string]string{"cluster_name": "c"},
			problems: []Problem{{"r", "", "variable cluster_name is set from the cluster and cannot be overridden; the release's value is ignored", ""}},
		},
		{
			name:    "a cluster label wins over the release",
			release: withVars(release("r"), map[string]string{"cluster_label_region": "default"}),
			cluster: cluster("c", "region", "eu"),
			want:    map[string]string{"cluster_name": "c", "cluster_label_region": "eu"},
		},
		{
			name:    "a release gives a default for a label the cluster lacks",
			release: withVars(release("r"), map[string]string{"cluster_label_region": "default"}),
			cluster: cluster("c"),
			want:    map[string]string{"cluster_name": "c", "cluster_label_region": "default"},
		},
		{
			name:    "keys that map to one name: the key that sorts last wins",
			release: release("r"),
			cluster: cluster("c", "a.b", "dot", "a-b", "dash", "a_b", "underscore"),
			want:    map[string]string{"cluster_name": "c", "cluster_label_a_b": "underscore"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Schedule(fleet(tt.release), []Cluster{tt.cluster}, artifacts, nil, "r1")
			as := p.Assignments[tt.cluster.Name]
			if len(as) != 1 {
				t.Fatalf("want one assignment, got %v (problems %v)", as, p.Problems)
			}
			if diff := cmp.Diff(tt.want, as[0].Vars); diff != "" {
				t.Errorf("vars mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, p.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScheduleRelabel feeds each plan back as the next call's previous, as the hub does.
func TestScheduleRelabel(t *testing.T) {
	t.Parallel()
	f := fleet(
		release("baseline", target("env", "production")),
		release("canary", target("env", "production", "canary", "true")),
	)
	steps := []struct {
		name   string
		labels []string
		want   []string
	}{
		{"production", []string{"env", "production"}, []string{"baseline"}},
		{"joins the canary ring", []string{"env", "production", "canary", "true"}, []string{"baseline", "canary"}},
		{"leaves the canary ring", []string{"env", "production"}, []string{"baseline"}},
		{"moved to staging", []string{"env", "staging"}, []string{}},
		{"back to production", []string{"env", "production"}, []string{"baseline"}},
	}
	var previous map[string]desired.Document
	for _, step := range steps {
		p := Schedule(f, []Cluster{cluster("c", step.labels...)}, artifacts, previous, "r1")
		if diff := cmp.Diff(map[string][]string{"c": step.want}, assigned(p)); diff != "" {
			t.Errorf("%s: assignments mismatch (-want +got):\n%s", step.name, diff)
		}
		previous = documents(p)
	}
}

func TestScheduleSourceMissing(t *testing.T) {
	t.Parallel()
	old := desired.Assignment{
		Release: "baseline", Source: "platform", URL: "https://hub.example.com/artifacts/sha256:0000",
		Revision: "main@sha1:0000", Digest: "sha256:0000", Path: "baseline", SelfHeal: true,
		Timeout: 5 * time.Minute, Interval: 10 * time.Minute, Vars: map[string]string{"cluster_name": "a"},
	}
	apps := release("apps")
	apps.Spec.Source = "apps"
	appsArtifact := Artifact{Source: "apps", URL: "https://hub.example.com/artifacts/sha256:bbbb", Revision: "v1.2.0@sha1:2222", Digest: "sha256:bbbb"}
	f := fleet(release("baseline", target("env", "production")), apps)
	clusters := []Cluster{cluster("a", "env", "production"), cluster("b", "env", "production"), cluster("c", "env", "staging")}

	p := Schedule(f, clusters, map[string]Artifact{"apps": appsArtifact}, assignmentsOnly(map[string][]desired.Assignment{
		"a": {old},
		// c's release no longer selects it: removed even while its source is down.
		"c": {func() desired.Assignment { a := old; a.Vars = map[string]string{"cluster_name": "c"}; return a }()},
	}), "r1")

	if diff := cmp.Diff(map[string][]string{"a": {"apps", "baseline"}, "b": {"apps"}, "c": {"apps"}}, assigned(p)); diff != "" {
		t.Errorf("assignments mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(old, p.Assignments["a"][1]); diff != "" {
		t.Errorf("kept assignment differs from the previous one (-want +got):\n%s", diff)
	}
	if got := p.Assignments["b"][0].Digest; got != appsArtifact.Digest {
		t.Errorf("apps on b: digest %q, want %q", got, appsArtifact.Digest)
	}
	want := []Problem{
		{"baseline", "a", `source "platform" has no artifact; kept the previous assignment (revision main@sha1:0000)`, ""},
		{"baseline", "b", `source "platform" has no artifact; not assigned`, ""},
	}
	if diff := cmp.Diff(want, p.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestScheduleIsPure(t *testing.T) {
	t.Parallel()
	f := fleet(
		withVars(release("b", target("env", "production")), map[string]string{"x": "1"}),
		withPath(release("a"), "clusters/{{ .Cluster.Name }}"),
		release("c", target("region", "eu"), target("tier", "1")),
	)
	clusters := make([]Cluster, 0, 50)
	for i := range 50 {
		clusters = append(clusters, cluster(fmt.Sprintf("c%02d", i), "env", []string{"production", "staging"}[i%2], "region", []string{"eu", "us", "ap"}[i%3]))
	}
	previous := map[string][]desired.Assignment{"c00": {{Release: "gone", Vars: map[string]string{"k": "v"}}}}
	first := Schedule(f, clusters, artifacts, assignmentsOnly(previous), "r1")

	// Same inputs in another order give the same plan.
	reversed := slices.Clone(clusters)
	slices.Reverse(reversed)
	g := *f
	g.Releases = slices.Clone(f.Releases)
	slices.Reverse(g.Releases)
	if diff := cmp.Diff(first, Schedule(&g, reversed, artifacts, assignmentsOnly(previous), "r1")); diff != "" {
		t.Errorf("plan depends on input order (-first +second):\n%s", diff)
	}

	// The plan shares no maps with the inputs or with other assignments.
	first.Assignments["c00"][0].Vars["cluster_name"] = "changed"
	if diff := cmp.Diff(map[string]string{"x": "1"}, f.Releases[0].Spec.Variables); diff != "" {
		t.Errorf("release variables changed (-want +got):\n%s", diff)
	}
	if got := first.Assignments["c00"][1].Vars["cluster_name"]; got != "c00" {
		t.Errorf("assignments of one cluster share their vars: got cluster_name %q", got)
	}
}

func TestScheduleMalformedInput(t *testing.T) {
	t.Parallel()
	f := fleet(release("dup"), release("dup", target("env", "x")))
	p := Schedule(f, []Cluster{cluster("a"), cluster("a", "env", "x"), {}}, artifacts, nil, "r1")
	if diff := cmp.Diff(map[string][]string{"a": {"dup"}}, assigned(p)); diff != "" {
		t.Errorf("assignments mismatch (-want +got):\n%s", diff)
	}
	want := []Problem{
		{"", "", "a cluster without a name was left out", ""},
		{"", "a", "cluster is listed more than once; the first entry was used", ""},
		{"dup", "", "release is defined more than once; the first definition was used", ""},
	}
	if diff := cmp.Diff(want, p.Problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{"baseline", "eu-1", "m", ""}, "Release/baseline on cluster eu-1: m"},
		{Problem{"baseline", "", "m", ""}, "Release/baseline: m"},
		{Problem{"", "eu-1", "m", ""}, "cluster eu-1: m"},
		{Problem{"", "", "m", ""}, "m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// documents is a plan's documents by cluster: the next call's previous, as the hub stores it.
func documents(p Plan) map[string]desired.Document {
	out := make(map[string]desired.Document, len(p.Assignments))
	for name := range p.Assignments {
		out[name] = p.Document(name)
	}
	return out
}

// assignmentsOnly is a previous plan without tombstones.
func assignmentsOnly(m map[string][]desired.Assignment) map[string]desired.Document {
	if m == nil {
		return nil
	}
	out := make(map[string]desired.Document, len(m))
	for name, as := range m {
		out[name] = desired.Document{Assignments: as}
	}
	return out
}
