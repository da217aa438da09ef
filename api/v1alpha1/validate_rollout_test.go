package v1alpha1

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// window returns a Window document named name with spec lines appended.
func window(name, spec string) string {
	return "apiVersion: flotilla.dev/v1alpha1\nkind: Window\nmetadata: {name: " + name + "}\nspec:\n" + spec
}

const validWindow = "  type: deny\n  schedule: '0 9 * * 1-5'\n  duration: 9h\n"

// parseProblems parses docs in file f beside platformSource and returns the problems.
func parseProblems(t *testing.T, f, docs string) []Problem {
	t.Helper()
	fleet, err := Parse(map[string][]byte{"fleet/sources.yaml": []byte(platformSource), f: []byte(docs)})
	if err == nil {
		if fleet == nil {
			t.Fatal("Parse returned neither a fleet nor an error")
		}
		return nil
	}
	ie, ok := err.(*InvalidError)
	if !ok {
		t.Fatalf("error %T: %v", err, err)
	}
	return ie.Problems
}

func TestParseRollout(t *testing.T) {
	t.Parallel()
	const f = "fleet/releases.yaml"
	web := func(rollout string) string { return release("web", validSpec+"  rollout:\n"+rollout) }
	p := func(field, msg string) Problem { return Problem{f, "Release/web", field, msg, 0} }
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "the issue's example", spec: "" +
			"    waves:\n" +
			"      - {name: canary, selector: {matchLabels: {ring: canary}}, maxConcurrent: 1, bake: 10m}\n" +
			"      - {name: eu, selector: {matchLabels: {region: eu}}, maxConcurrent: 25%, maxFailures: 0}\n" +
			"      - {name: rest, maxConcurrent: 50%, approval: required}\n" +
			"    progressDeadline: 15m\n    onFailure: halt\n    unreachable: skip\n"},
		{name: "rollback, wait and restart", spec: "    waves: [{name: all}]\n    onFailure: rollback\n    unreachable: wait\n    supersede: restart\n"},
		{name: "no waves", spec: "    waves: []\n",
			want: []Problem{p("spec.rollout.waves", "must list at least one wave (a wave without a selector takes every cluster)")}},
		{name: "a wave without a name", spec: "    waves: [{maxConcurrent: 1}]\n",
			want: []Problem{p("spec.rollout.waves[0].name", "must be set")}},
		{name: "two waves of one name", spec: "    waves: [{name: a, selector: {matchLabels: {ring: a}}}, {name: a}]\n",
			want: []Problem{p("spec.rollout.waves[1].name", `wave "a" is already defined as waves[0]`)}},
		{name: "a wave name that is not a label", spec: "    waves: [{name: Canary_1}]\n",
			want: []Problem{p("spec.rollout.waves[0].name", `"Canary_1" is not a valid wave name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)}},
		{name: "a wave without a selector before the last", spec: "    waves: [{name: a}, {name: b}]\n",
			want: []Problem{p("spec.rollout.waves[0].selector", "must be set: only the last wave may leave it out (it takes every cluster left)")}},
		{name: "an empty selector before the last", spec: "    waves: [{name: a, selector: {}}, {name: b}]\n",
			want: []Problem{p("spec.rollout.waves[0].selector", "matches every cluster, so the waves after it would get none: give it matchLabels, or make it the last wave")}},
		{name: "a selector with a bad label", spec: "    waves: [{name: a, selector: {matchLabels: {ring: 'a b'}}}, {name: b}]\n",
			want: []Problem{p("spec.rollout.waves[0].selector.matchLabels[ring]", `label value "a b" is invalid: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`)}},
		{name: "maxConcurrent 0", spec: "    waves: [{name: a, maxConcurrent: 0}]\n",
			want: []Problem{p("spec.rollout.waves[0].maxConcurrent", "must be at least 1, not 0: a wave that updates no cluster at a time never finishes")}},
		{name: "maxConcurrent 0%", spec: "    waves: [{name: a, maxConcurrent: '0%'}]\n",
			want: []Problem{p("spec.rollout.waves[0].maxConcurrent", "must be a percentage from 1% to 100%, not 0%")}},
		{name: "maxConcurrent above 100%", spec: "    waves: [{name: a, maxConcurrent: '150%'}]\n",
			want: []Problem{p("spec.rollout.waves[0].maxConcurrent", `"150%" is not a whole number of at least 0 or a percentage from 0% to 100%`)}},
		{name: "negative maxFailures", spec: "    waves: [{name: a, maxFailures: -1}]\n",
			want: []Problem{p("spec.rollout.waves[0].maxFailures", "-1 is not a whole number of at least 0")}},
		{name: "negative bake", spec: "    waves: [{name: a, bake: -1m}]\n",
			want: []Problem{p("spec.rollout.waves[0].bake", "must be positive, not -1m0s")}},
		{name: "an approval that is not required", spec: "    waves: [{name: a, approval: manual}]\n",
			want: []Problem{p("spec.rollout.waves[0].approval", `"manual" is not an approval: want "required", or leave it out`)}},
		{name: "negative progress deadline", spec: "    waves: [{name: a}]\n    progressDeadline: -5m\n",
			want: []Problem{p("spec.rollout.progressDeadline", "must be positive, not -5m0s")}},
		{name: "unknown failure action", spec: "    waves: [{name: a}]\n    onFailure: retry\n",
			want: []Problem{p("spec.rollout.onFailure", `"retry" is not valid: want halt or rollback (default halt)`)}},
		{name: "unknown unreachable policy", spec: "    waves: [{name: a}]\n    unreachable: ignore\n",
			want: []Problem{p("spec.rollout.unreachable", `"ignore" is not valid: want skip or wait (default skip)`)}},
		{name: "unknown supersede policy", spec: "    waves: [{name: a}]\n    supersede: replace\n",
			want: []Problem{p("spec.rollout.supersede", `"replace" is not valid: want queue or restart (default queue)`)}},
		{name: "a typo in a wave", spec: "    waves: [{name: a, maxConcurrency: 1}]\n",
			want: []Problem{p("spec.rollout.waves[0].maxConcurrency", `unknown field "maxConcurrency", did you mean "maxConcurrent"?`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseProblems(t, f, web(tt.spec)), ignoreLine); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A fleet built in code can hold values YAML cannot: they are refused too.
func TestValidateRolloutInCode(t *testing.T) {
	t.Parallel()
	fleet := &Fleet{
		Sources: []Source{{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/p.git"}}}},
		Releases: []Release{{Metadata: ObjectMeta{Name: "web"}, Spec: ReleaseSpec{Source: "platform", Targets: []Target{{}}, Rollout: &Rollout{
			Waves: []Wave{{Name: "a", MaxConcurrent: IntOrPercent{Value: -2, Set: true}, MaxFailures: IntOrPercent{Value: 101, Percent: true, Set: true}}},
		}}}},
	}
	got := problemsOf(t, fleet.Validate())
	want := []string{
		"Release/web: spec.rollout.waves[0].maxConcurrent: must be at least 1, not -2: a wave that updates no cluster at a time never finishes",
		"Release/web: spec.rollout.waves[0].maxFailures: must be a whole number of at least 0 or a percentage from 0% to 100%, not 101%",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestParseIgnoreAndManagers(t *testing.T) {
	t.Parallel()
	const f = "fleet/releases.yaml"
	p := func(field, msg string) Problem { return Problem{f, "Release/web", field, msg, 0} }
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "HPA replicas and operators", spec: "  ignore: [{target: {group: apps, kind: Deployment, name: web, namespace: shop}, paths: [/spec/replicas, /metadata/annotations/a~1b~0c]}]\n" +
			"  respectManagers: [kube-controller-manager, '*-operator']\n"},
		{name: "a rule for every object", spec: "  ignore: [{paths: [/spec/replicas]}]\n"},
		{name: "no paths", spec: "  ignore: [{target: {kind: Deployment}, paths: []}]\n",
			want: []Problem{p("spec.ignore[0].paths", `must list at least one JSON pointer, such as "/spec/replicas"`)}},
		{name: "paths left out", spec: "  ignore: [{target: {kind: Deployment}}]\n",
			want: []Problem{p("spec.ignore[0].paths", `must list at least one JSON pointer, such as "/spec/replicas"`)}},
		{name: "a dotted path", spec: "  ignore: [{paths: [spec.replicas]}]\n",
			want: []Problem{p("spec.ignore[0].paths[0]", `"spec.replicas" is not a JSON pointer: it must start with "/", as in "/spec/replicas"`)}},
		{name: "an empty path", spec: "  ignore: [{paths: ['']}]\n",
			want: []Problem{p("spec.ignore[0].paths[0]", `must not be empty: a JSON pointer to a field, such as "/spec/replicas"`)}},
		{name: "the whole object", spec: "  ignore: [{paths: [/]}]\n",
			want: []Problem{p("spec.ignore[0].paths[0]", `"/" names no field: point at one, such as "/spec/replicas"`)}},
		{name: "a bad escape", spec: "  ignore: [{paths: [/metadata/annotations/a~2b, /x~]}]\n",
			want: []Problem{
				p("spec.ignore[0].paths[0]", `"/metadata/annotations/a~2b" is not a JSON pointer: "~" must be followed by 0 or 1 (write "~0" for "~" and "~1" for "/" in a key)`),
				p("spec.ignore[0].paths[1]", `"/x~" is not a JSON pointer: "~" must be followed by 0 or 1 (write "~0" for "~" and "~1" for "/" in a key)`),
			}},
		{name: "a kind and a namespace that cannot be", spec: "  ignore: [{target: {kind: 'apps/Deployment', namespace: Shop}, paths: [/spec/replicas]}]\n",
			want: []Problem{
				p("spec.ignore[0].target.kind", `"apps/Deployment" is not a kind such as "Deployment"`),
				p("spec.ignore[0].target.namespace", `"Shop" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`),
			}},
		{name: "an unknown target field", spec: "  ignore: [{target: {resource: deployments}, paths: [/spec/replicas]}]\n",
			want: []Problem{p("spec.ignore[0].target.resource", `unknown field "resource" (known fields: group, kind, name, namespace)`)}},
		{name: "an empty manager", spec: "  respectManagers: [kube-controller-manager, ' ']\n",
			want: []Problem{p("spec.respectManagers[1]", `must not be empty: name a field manager, such as "kube-controller-manager" or "*-operator"`)}},
		{name: "a manager twice", spec: "  respectManagers: [hpa, hpa]\n",
			want: []Problem{p("spec.respectManagers[1]", `"hpa" is listed twice`)}},
		{name: "a manager name too long", spec: "  respectManagers: [" + string(make129()) + "]\n",
			want: []Problem{p("spec.respectManagers[0]", "is 129 bytes long: a field manager's name has at most 128")}},
		{name: "adopt from Argo CD and Helm", spec: "  adopt: {fromManagers: [argocd-controller, helm], helmRelease: shop, helmReleaseNamespace: shop}\n"},
		{name: "adopt from nobody", spec: "  adopt: {fromManagers: []}\n",
			want: []Problem{p("spec.adopt.fromManagers", `must name the field managers to take over, such as "argocd-controller" or "kustomize-controller"`)}},
		{name: "adopt from flotilla, twice, and empty", spec: "  adopt: {fromManagers: [flotilla, helm, helm, '']}\n",
			want: []Problem{
				p("spec.adopt.fromManagers[0]", `"flotilla" is Flotilla's own field manager: there is nothing to take over from it`),
				p("spec.adopt.fromManagers[2]", `"helm" is listed twice`),
				p("spec.adopt.fromManagers[3]", "must not be empty"),
			}},
		{name: "adopt a Helm release with a bad name and namespace", spec: "  adopt: {fromManagers: [helm], helmRelease: " + strings.Repeat("h", 54) + ", helmReleaseNamespace: Shop}\n",
			want: []Problem{
				p("spec.adopt.helmRelease", "is 54 bytes long: a Helm release name has at most 53"),
				p("spec.adopt.helmReleaseNamespace", `"Shop" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`),
			}},
		{name: "a Helm namespace without a release", spec: "  adopt: {fromManagers: [helm], helmReleaseNamespace: shop}\n",
			want: []Problem{p("spec.adopt.helmReleaseNamespace", "is set without helmRelease: name the Helm release whose storage Secrets go")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseProblems(t, f, release("web", validSpec+tt.spec)), ignoreLine); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func make129() []byte {
	b := make([]byte, 129)
	for i := range b {
		b[i] = 'm'
	}
	return b
}

func TestParseDependsOn(t *testing.T) {
	t.Parallel()
	const f = "fleet/releases.yaml"
	rel := func(name string, deps string) string {
		spec := validSpec
		if deps != "" {
			spec += "  dependsOn: [" + deps + "]\n"
		}
		return release(name, spec)
	}
	docs := func(d ...string) string {
		out := d[0]
		for _, s := range d[1:] {
			out += "---\n" + s
		}
		return out
	}
	tests := []struct {
		name string
		docs string
		want []string
	}{
		{name: "a chain", docs: docs(rel("crds", ""), rel("operator", "crds"), rel("app", "operator, crds"))},
		{name: "itself", docs: docs(rel("a", "a")),
			want: []string{f + ` line 1: Release/a: spec.dependsOn[0]: release "a" cannot depend on itself`}},
		{name: "an undefined release", docs: docs(rel("a", "b")),
			want: []string{f + ` line 1: Release/a: spec.dependsOn[0]: release "b" is not defined in this fleet`}},
		{name: "an empty name and a name twice", docs: docs(rel("a", "'', b, b"), rel("b", "")),
			want: []string{
				f + ` line 1: Release/a: spec.dependsOn[0]: must not be empty: name a release`,
				f + ` line 1: Release/a: spec.dependsOn[2]: "b" is listed twice`,
			}},
		{name: "two releases", docs: docs(rel("a", "b"), rel("b", "a")),
			want: []string{f + ` line 1: Release/a: spec.dependsOn: dependsOn cycle: a -> b -> a`}},
		{name: "three releases named from the first in order", docs: docs(rel("c", "a"), rel("b", "c"), rel("a", "b"), rel("d", "a")),
			want: []string{f + ` line 17: Release/a: spec.dependsOn: dependsOn cycle: a -> b -> c -> a`}},
		{name: "two cycles", docs: docs(rel("a", "b"), rel("b", "a, c"), rel("c", "d"), rel("d", "c")),
			want: []string{
				f + ` line 1: Release/a: spec.dependsOn: dependsOn cycle: a -> b -> a`,
				f + ` line 17: Release/c: spec.dependsOn: dependsOn cycle: c -> d -> c`,
			}},
		{name: "a diamond is no cycle", docs: docs(rel("a", "b, c"), rel("b", "d"), rel("c", "d"), rel("d", ""))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(map[string][]byte{"fleet/sources.yaml": []byte(platformSource), f: []byte(tt.docs)})
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	const f = "fleet/windows.yaml"
	p := func(field, msg string) Problem { return Problem{f, "Window/quiet", field, msg, 0} }
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "a deny window on weekdays", spec: validWindow},
		{name: "every field", spec: "  type: allow\n  schedule: '0 22 * * *'\n  duration: 6h\n  timeZone: Europe/Berlin\n" +
			"  releases: [web, 'team-a-*']\n  clusterSelector: {matchLabels: {env: production}}\n  blocks: [revisions, prune, selfHeal]\n"},
		{name: "no type", spec: "  schedule: '0 9 * * *'\n  duration: 1h\n",
			want: []Problem{p("spec.type", "must be set: allow or deny")}},
		{name: "an unknown type", spec: "  type: block\n  schedule: '0 9 * * *'\n  duration: 1h\n",
			want: []Problem{p("spec.type", `"block" is not a window type: want allow or deny`)}},
		{name: "no schedule", spec: "  type: deny\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `must be set: a five-field cron expression (minute hour day-of-month month day-of-week), such as "0 22 * * *"`)}},
		{name: "four fields", spec: "  type: deny\n  schedule: '0 9 * *'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"0 9 * *" is not a five-field cron expression (minute hour day-of-month month day-of-week): expected exactly 5 fields, found 4: [0 9 * *]`)}},
		{name: "seconds", spec: "  type: deny\n  schedule: '0 0 9 * * *'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"0 0 9 * * *" is not a five-field cron expression (minute hour day-of-month month day-of-week): expected exactly 5 fields, found 6: [0 0 9 * * *]`)}},
		{name: "minute 61", spec: "  type: deny\n  schedule: '61 9 * * *'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"61 9 * * *" is not a five-field cron expression (minute hour day-of-month month day-of-week): end of range (61) above maximum (59): 61`)}},
		{name: "a descriptor", spec: "  type: deny\n  schedule: '@daily'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"@daily" is not a five-field cron expression (minute hour day-of-month month day-of-week): parser does not accept descriptors: @daily`)}},
		{name: "a time zone in the schedule", spec: "  type: deny\n  schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"CRON_TZ=Asia/Tokyo 0 9 * * *": set the time zone in spec.timeZone, not in the schedule`)}},
		{name: "a day that never comes", spec: "  type: deny\n  schedule: '0 0 30 2 *'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"0 0 30 2 *" never opens: no date matches it`)}},
		{name: "no duration", spec: "  type: deny\n  schedule: '0 9 * * *'\n",
			want: []Problem{p("spec.duration", `must be set: how long the window stays open each time it opens, such as "8h"`)}},
		{name: "a negative duration", spec: "  type: deny\n  schedule: '0 9 * * *'\n  duration: -1h\n",
			want: []Problem{p("spec.duration", "must be positive, not -1h0m0s")}},
		{name: "an unknown time zone", spec: validWindow + "  timeZone: Europe/Atlantis\n",
			want: []Problem{p("spec.timeZone", `"Europe/Atlantis" is not an IANA time zone name, such as "Europe/Berlin": unknown time zone Europe/Atlantis`)}},
		{name: "the machine's zone", spec: validWindow + "  timeZone: Local\n",
			want: []Problem{p("spec.timeZone", `"Local" is whatever zone each machine is set to: name the zone, such as "Europe/Berlin" or "UTC"`)}},
		{name: "a path for a time zone", spec: validWindow + "  timeZone: ../../etc/passwd\n",
			want: []Problem{p("spec.timeZone", `"../../etc/passwd" is not an IANA time zone name, such as "Europe/Berlin"`)}},
		{name: "a release pattern that cannot match", spec: validWindow + "  releases: ['', 'Web_*']\n",
			want: []Problem{
				p("spec.releases[0]", `"" is not a release name or pattern: must not be empty`),
				p("spec.releases[1]", `"Web_*" is not a release name or pattern: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`),
			}},
		{name: "blocks", spec: validWindow + "  blocks: [revisions, sync, prune, prune]\n",
			want: []Problem{
				p("spec.blocks[1]", `"sync" is not something a window blocks: want revisions, prune, selfHeal`),
				p("spec.blocks[3]", `"prune" is listed twice`),
			}},
		{name: "a bad cluster selector", spec: validWindow + "  clusterSelector: {matchLabels: {env: 'a b'}}\n",
			want: []Problem{p("spec.clusterSelector.matchLabels[env]", `label value "a b" is invalid: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`)}},
		{name: "a typo", spec: validWindow + "  timezone: UTC\n",
			want: []Problem{p("spec.timezone", `unknown field "timezone", did you mean "timeZone"?`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseProblems(t, f, window("quiet", tt.spec)), ignoreLine); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWindowNames(t *testing.T) {
	t.Parallel()
	_, err := Parse(map[string][]byte{
		"fleet/sources.yaml": []byte(platformSource),
		"fleet/a.yaml":       []byte(window("quiet", validWindow) + "---\n" + window("quiet", validWindow)),
		"fleet/b.yaml":       []byte(window("quiet", validWindow) + "---\n" + window("Quiet Hours", validWindow)),
	})
	want := []string{
		`fleet/a.yaml line 9: Window/quiet: metadata.name: Window "quiet" is already defined earlier in this file`,
		`fleet/b.yaml line 1: Window/quiet: metadata.name: Window "quiet" is already defined in fleet/a.yaml`,
		`fleet/b.yaml line 9: Window/Quiet Hours: metadata.name: "Quiet Hours" is not a valid name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
	}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A parsed window keeps every field as written.
func TestParseWindowFields(t *testing.T) {
	t.Parallel()
	fleet, err := Parse(map[string][]byte{"fleet/w.yaml": []byte(window("hours", "  type: allow\n  schedule: '0 22 * * *'\n  duration: 6h\n  timeZone: Europe/Berlin\n"+
		"  releases: ['team-a-*']\n  clusterSelector: {matchLabels: {env: production}}\n  blocks: [revisions, selfHeal]\n"))})
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{{APIVersion: APIVersion, Kind: KindWindow, Metadata: ObjectMeta{Name: "hours"}, Spec: WindowSpec{
		Type: WindowAllow, Schedule: "0 22 * * *", Duration: Duration{6 * time.Hour}, TimeZone: "Europe/Berlin",
		Releases: []string{"team-a-*"}, ClusterSelector: LabelSelector{MatchLabels: map[string]string{"env": "production"}},
		Blocks: []string{BlockRevisions, BlockSelfHeal},
	}}}
	if diff := cmp.Diff(want, fleet.Windows); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
}

// A tenant's fleet repository holds no Windows: a window's releases are globs and its
// clusters a selector, so a team's window could hold back other teams' releases.
func TestParseTenantWindow(t *testing.T) {
	t.Parallel()
	const f = "tenant/fleet.yaml"
	team := Project{Metadata: ObjectMeta{Name: "team-a"}, Spec: ProjectSpec{
		Sources: []string{"platform"}, Namespaces: []string{"team-a"},
		ServiceAccount: &ServiceAccountRef{Namespace: "team-a", Name: "deployer"},
	}}
	main := []Source{{Metadata: ObjectMeta{Name: "platform"}, Spec: SourceSpec{Git: &GitSource{URL: "https://git.example.com/platform.git"}}}}
	docs := release("web", validSpec+"  suspend: true\n") + "---\n" + window("quiet", validWindow+"  releases: [web]\n")
	_, err := ParseTenant(map[string][]byte{f: []byte(docs)}, Tenant{Project: team, Sources: main})
	want := []string{f + ` line 9: Window/quiet: a tenant fleet repository holds only Sources and Releases of project team-a; Windows are defined in the main fleet (a team holds back its own releases with spec.suspend)`}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	// Its releases may use everything else issue 13 adds.
	docs = release("web", validSpec+"  suspend: true\n  rollout: {waves: [{name: all}]}\n  dependsOn: [db]\n  ignore: [{paths: [/spec/replicas]}]\n") + "---\n" + release("db", validSpec)
	if _, err := ParseTenant(map[string][]byte{f: []byte(docs)}, Tenant{Project: team, Sources: main}); err != nil {
		t.Errorf("a tenant's release with a rollout, dependsOn and ignore rules: %v", err)
	}
}

// Windows an agent would refuse (internal/window.Check bounds them) are refused here first.
func TestParseWindowBounds(t *testing.T) {
	t.Parallel()
	const f = "fleet/windows.yaml"
	p := func(field, msg string) Problem { return Problem{f, "Window/quiet", field, msg, 0} }
	many := "  releases: ["
	for i := range 257 {
		if i > 0 {
			many += ", "
		}
		many += fmt.Sprintf("r%d", i)
	}
	many += "]\n"
	tests := []struct {
		name string
		spec string
		want []Problem
	}{
		{name: "a year and a day", spec: "  type: deny\n  schedule: '0 0 1 1 *'\n  duration: 8785h\n",
			want: []Problem{p("spec.duration", "must be at most 8784h0m0s (366 days), not 8785h0m0s")}},
		{name: "half a second", spec: "  type: deny\n  schedule: '0 0 1 1 *'\n  duration: 500ms\n",
			want: []Problem{p("spec.duration", "must be at least 1m, not 500ms")}},
		{name: "a minute", spec: "  type: deny\n  schedule: '0 0 1 1 *'\n  duration: 1m\n"},
		{name: "366 days", spec: "  type: deny\n  schedule: '0 0 1 1 *'\n  duration: 8784h\n"},
		{name: "a long schedule", spec: "  type: deny\n  schedule: '0 9 * * " + strings.Repeat("1,", 130) + "1'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", "is 269 bytes long, more than 256")}},
		{name: "a long time zone", spec: validWindow + "  timeZone: " + strings.Repeat("a", 65) + "\n",
			want: []Problem{p("spec.timeZone", "is 65 bytes long: an IANA time zone name has at most 64")}},
		{name: "257 releases", spec: validWindow + many,
			want: []Problem{p("spec.releases", `lists 257 releases, more than 256: use patterns such as "team-a-*"`)}},
		{name: "a time zone prefix without a space", spec: "  type: deny\n  schedule: 'TZ=x'\n  duration: 1h\n",
			want: []Problem{p("spec.schedule", `"TZ=x": set the time zone in spec.timeZone, not in the schedule`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseProblems(t, f, window("quiet", tt.spec)), ignoreLine); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// The fleet objects docs/windows.md shows are valid.
func TestWindowsDocExamples(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/windows.md")
	if err != nil {
		t.Fatal(err)
	}
	appsSource := "apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: apps}\nspec:\n  git: {url: https://git.example.com/apps.git}\n"
	blocks := 0
	for i, block := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		blocks++
		if _, err := Parse(map[string][]byte{"fleet/sources.yaml": []byte(appsSource), fmt.Sprintf("docs/windows.md#%d", i): []byte(block)}); err != nil {
			t.Errorf("example %d of docs/windows.md:\n%s\n%v", i+1, block, err)
		}
	}
	if blocks < 3 {
		t.Errorf("%d YAML examples found in docs/windows.md, want at least 3", blocks)
	}
}

func TestParseTooManyWindows(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 501 {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(window(fmt.Sprintf("w%d", i), validWindow))
	}
	_, err := Parse(map[string][]byte{"fleet/windows.yaml": []byte(b.String())})
	want := []string{"fleet/windows.yaml line 4001: Window/w500: the fleet defines 501 windows, more than 500: every cluster's agent receives the windows that select it, and refuses a desired state with too many gates"}
	if diff := cmp.Diff(want, problemsOf(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
