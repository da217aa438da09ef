package v1alpha1

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoadDir(t *testing.T) {
	t.Parallel()
	got, err := LoadDir("testdata/fleet")
	if err != nil {
		t.Fatal(err)
	}
	want := &Fleet{
		Sources: []Source{
			{
				APIVersion: APIVersion, Kind: KindSource,
				Metadata: ObjectMeta{Name: "platform"},
				Spec: SourceSpec{
					Git:      &GitSource{URL: "https://git.example.com/platform.git", Branch: "main"},
					Interval: Duration{time.Minute},
				},
			},
			{
				APIVersion: APIVersion, Kind: KindSource,
				Metadata: ObjectMeta{Name: "apps", Labels: map[string]string{"team": "apps"}},
				Spec: SourceSpec{
					Git:      &GitSource{URL: "https://git.example.com/apps.git", Semver: "^1.2"},
					Interval: Duration{90 * time.Minute},
				},
			},
		},
		// Files in name order: monitoring.json, releases/apps.yml, releases/baseline.yaml.
		Releases: []Release{
			{
				APIVersion: APIVersion, Kind: KindRelease,
				Metadata: ObjectMeta{Name: "monitoring"},
				Spec: ReleaseSpec{
					Source:  "platform",
					Path:    "monitoring",
					Targets: []Target{{}},
				},
			},
			{
				APIVersion: APIVersion, Kind: KindRelease,
				Metadata: ObjectMeta{Name: "apps"},
				Spec: ReleaseSpec{
					Source: "apps",
					Path:   "deploy/apps",
					Targets: []Target{
						{Selector: LabelSelector{MatchLabels: map[string]string{"env": "staging"}}},
						{Selector: LabelSelector{MatchLabels: map[string]string{"env": "production", "tier": "1"}}},
					},
					Namespace:       "apps",
					CreateNamespace: true,
					SelfHeal:        new(false),
					Timeout:         Duration{90 * time.Second},
					Variables:       map[string]string{"replicas": "3", "cluster_label_region": "eu"},
					Project:         "apps",
				},
			},
			{
				APIVersion: APIVersion, Kind: KindRelease,
				Metadata: ObjectMeta{Name: "baseline"},
				Spec: ReleaseSpec{
					Source:    "platform",
					Path:      "clusters/{{ .Cluster.Labels.region }}/baseline",
					Targets:   []Target{{Selector: LabelSelector{MatchLabels: map[string]string{"env": "production"}}}},
					Namespace: "platform-system",
					Prune:     true,
					SelfHeal:  new(true),
					Wait:      true,
					Timeout:   Duration{5 * time.Minute},
					Interval:  Duration{10 * time.Minute},
				},
			},
		},
		Notifications: []Notification{
			{
				APIVersion: APIVersion, Kind: KindNotification,
				Metadata: ObjectMeta{Name: "platform-slack"},
				Spec: NotificationSpec{
					Type:            NotificationSlack,
					URLFile:         "/etc/flotilla/slack-webhook-url",
					Events:          []string{EventFailed, EventUnreachable, EventRecovered},
					ClusterSelector: LabelSelector{MatchLabels: map[string]string{"env": "production"}},
					RateLimit:       &RateLimit{Messages: 5, Per: Duration{15 * time.Minute}},
				},
			},
			{
				APIVersion: APIVersion, Kind: KindNotification,
				Metadata: ObjectMeta{Name: "incidents"},
				Spec: NotificationSpec{
					Type:      NotificationWebhook,
					URL:       "https://incidents.example.com/hooks/flotilla",
					Releases:  []string{"baseline"},
					SkewAfter: Duration{30 * time.Minute},
				},
			},
		},
	}
	want.Projects = []Project{{
		APIVersion: APIVersion, Kind: KindProject,
		Metadata: ObjectMeta{Name: "apps"},
		Spec: ProjectSpec{
			Sources:         []string{"apps", "https://git.example.com/apps/*"},
			ClusterSelector: LabelSelector{MatchLabels: map[string]string{"tier": "1"}},
			Namespaces:      []string{"apps", "apps-*"},
			Kinds: ProjectKinds{
				Allow: []GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "Role"}, {Group: "", Kind: "Namespace"}},
				Deny:  []GroupKind{{Group: "", Kind: "Secret"}},
			},
			ServiceAccount: &ServiceAccountRef{Namespace: "apps", Name: "flotilla-deployer"},
			Fleet:          &ProjectFleet{URL: "https://git.example.com/apps/fleet.git", Branch: "main", Path: "clusters", Credentials: "apps-ro"},
		},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadDir mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadDirInvalid(t *testing.T) {
	t.Parallel()
	_, err := LoadDir("testdata/invalid")
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("LoadDir: want *InvalidError, got %v", err)
	}
	const rel, src, ntf = "testdata/invalid/releases.yaml", "testdata/invalid/sources.yaml", "testdata/invalid/notifications.yaml"
	want := []Problem{
		{ntf, "Notification/chat", "spec.rateLimit.messages", "must be a whole number, not a string", 0},
		{ntf, "Notification/pager", "spec.type", `"pagerduty" is not a notification type: want webhook or slack`, 0},
		{ntf, "Notification/pager", "spec", "set url or urlFile, not both", 0},
		{ntf, "Notification/pager", "spec.events[1]", `"exploded" is not an event: want failed, drifted, skewed, unreachable, recovered, rollout`, 0},
		{ntf, "Notification/pager", "spec.events[2]", `"failed" is listed twice`, 0},
		{ntf, "Notification/pager", "spec.releases[0]", `release "nope" is not defined`, 0},
		{ntf, "Notification/pager", "spec.rateLimit.messages", "must be at least 1, not 0", 0},
		{ntf, "Notification/pager", "spec.rateLimit.per", `must be a positive duration such as "10m"`, 0},
		// Release "apps" uses source "apps", whose document failed to decode: no "not
		// defined" problem for it.
		{rel, "Release/baseline", "spec.targets", "must list at least one target (a target with an empty selector matches every cluster)", 0},
		{rel, "Release/baseline", "spec.path", `path "/clusters/{{ .Cluster.Label.region }}" must be relative to the root of the source`, 0},
		{rel, "Release/baseline", "spec.path", ".Cluster.Label.region does not exist: a path template can use .Cluster.Name and .Cluster.Labels.<key>", 0},
		{rel, "Release/baseline", "spec.source", `source "platfrom" is not defined`, 0},
		{rel, "Release/baseline", "metadata.name", `Release "baseline" is already defined earlier in this file`, 0},
		{rel, "Release/baseline", "spec.timeout", "must be positive, not -1m0s", 0},
		{rel, "Release/baseline", "spec.variables[1bad]", `variable name "1bad" must match ^[_a-zA-Z][_a-zA-Z0-9]*$`, 0},
		{rel, "Release/baseline", "spec.variables[cluster_name]", "cluster_name is set from the cluster and cannot be overridden", 0},
		{src, "Source/apps", "spec.intervall", `unknown field "intervall", did you mean "interval"?`, 0},
		{src, "document 3", "", `apiVersion "v1", kind "ConfigMap" is not a fleet object: want apiVersion flotilla.dev/v1alpha1 with kind Source, Release, Notification, Project or Window`, 0},
		{src, "Source/platform", "spec.interval", "must be at least 2s, not 1s", 0},
		{src, "Source/platform", "spec.git", "set at most one of branch, tag, semver and commit, not branch and tag", 0},
	}
	if diff := cmp.Diff(want, invalid.Problems, ignoreLine); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadDirMissing(t *testing.T) {
	t.Parallel()
	_, err := LoadDir("testdata/does-not-exist")
	if err == nil {
		t.Fatal("LoadDir of a missing directory: want an error")
	}
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		t.Errorf("LoadDir of a missing directory: want an I/O error, got %v", err)
	}
}
