package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// cases are the test inputs; each has golden output under testdata/golden/NAME.
var cases = []struct {
	name    string
	input   string
	convert func([]*Object) *Result
}{
	{"argocd", "testdata/argocd", func(o []*Object) *Result {
		return ArgoCD(o, ArgoCDOptions{Repos: map[string]string{"https://github.com/example/addons-repo.git": "testdata/argocd-repo"}})
	}},
	{"argocd-no-checkout", "testdata/argocd/applicationsets.yaml", func(o []*Object) *Result { return ArgoCD(o, ArgoCDOptions{}) }},
	{"argocd-clean", "testdata/argocd-clean", func(o []*Object) *Result { return ArgoCD(o, ArgoCDOptions{}) }},
	{"flux", "testdata/flux", func(o []*Object) *Result { return Flux(o, FluxOptions{Cluster: "production"}) }},
}

func run(t *testing.T, input string, convert func([]*Object) *Result) *Result {
	t.Helper()
	var read Report
	objs, err := ReadInputs(input, DefaultLimits(), &read)
	if err != nil {
		t.Fatal(err)
	}
	res := convert(objs)
	res.Report.Findings = append(read.Findings, res.Report.Findings...)
	return res
}

// TestGolden converts each input, loads the output as the hub does (zero problems), and
// compares the files and the report with the golden ones.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tc.input, tc.convert)
			if err := res.Check(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := res.Write(dir); err != nil {
				t.Fatal(err)
			}
			fleet, err := v1alpha1.LoadDir(dir)
			if err != nil {
				t.Fatalf("the hub refuses the imported fleet: %v", err)
			}
			if len(fleet.Releases) != len(res.Releases) || len(fleet.Sources) != len(res.Sources) || len(fleet.Projects) != len(res.Projects) || len(fleet.Windows) != len(res.Windows) {
				t.Errorf("loaded %d releases, %d sources, %d projects; imported %d, %d, %d",
					len(fleet.Releases), len(fleet.Sources), len(fleet.Projects), len(res.Releases), len(res.Sources), len(res.Projects))
			}
			files, _ := res.Files()
			var rep bytes.Buffer
			if err := res.Report.WriteText(&rep); err != nil {
				t.Fatal(err)
			}
			files["report.txt"] = rep.Bytes()
			golden := filepath.Join("testdata", "golden", tc.name)
			if *update {
				os.RemoveAll(golden)
				if err := os.MkdirAll(golden, 0o755); err != nil {
					t.Fatal(err)
				}
				for n, data := range files {
					if err := os.WriteFile(filepath.Join(golden, n), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			want, _ := filepath.Glob(filepath.Join(golden, "*"))
			if len(want) != len(files) {
				t.Errorf("golden has %d files, the import %d (run go test -update)", len(want), len(files))
			}
			for n, data := range files {
				w, err := os.ReadFile(filepath.Join(golden, n))
				if err != nil {
					t.Errorf("%s: %v (run go test -update)", n, err)
					continue
				}
				if d := cmp.Diff(string(w), string(data)); d != "" {
					t.Errorf("%s differs from the golden file (-want +got):\n%s", n, d)
				}
			}
		})
	}
}

// TestReportLines asserts the findings a user must see, whatever the golden files say.
func TestReportLines(t *testing.T) {
	t.Parallel()
	type line struct {
		object, field string
		level         Level
		says          string
	}
	tests := []struct {
		tc    int
		lines []line
		// leftOut is whether the import exits 3.
		leftOut bool
	}{
		{tc: 0, leftOut: true, lines: []line{
			{"Job/billing/db-migrate", "metadata.annotations.argocd.argoproj.io/hook", LeftOut, "no sync hooks"},
			{"Job/billing/db-migrate", "metadata.annotations.argocd.argoproj.io/sync-wave", LeftOut, "sync wave -1"},
			{"Application/argocd/guestbook", "metadata.annotations.argocd.argoproj.io/sync-wave", LeftOut, "spec.dependsOn"},
			{"Application/argocd/guestbook", "spec.syncPolicy.syncOptions[0]", LeftOut, "Validate=false"},
			{"Application/argocd/guestbook", "spec.ignoreDifferences[1].jqPathExpressions", LeftOut, "JSON pointers"},
			{"Application/argocd/guestbook", "spec.syncPolicy.managedNamespaceMetadata", LeftOut, "Namespace manifest"},
			{"Application/argocd/jsonnet-app", "spec.source.directory.jsonnet", LeftOut, "Jsonnet"},
			{"Application/argocd/plugin-app", "spec.source.plugin", LeftOut, "plugin"},
			{"Application/argocd/prometheus", "spec.source.chart", LeftOut, "Helm chart"},
			{"Application/argocd/multi", "spec.sources", LeftOut, "2 sources"},
			{"Application/argocd/oci-app", "spec.source.repoURL", LeftOut, "OCI"},
			{"Application/other-argocd/billing-api", "spec.source.kustomize.namePrefix", LeftOut, "kustomization.yaml"},
			{"Application/other-argocd/billing-api", "metadata.name", Note, `"billing-api-2"`},
			{"Application/argocd/billing_API", "metadata.name", Note, `"billing-api"`},
			{"Application/argocd/billing_API", "spec.syncPolicy.automated", Action, "suspended"},
			{"Application/argocd/pinned", "spec.project", LeftOut, "missing-project"},
			{"ApplicationSet/argocd/unsupported", "spec.generators[0].pullRequest", LeftOut, "pullRequest generator is not converted"},
			{"ApplicationSet/argocd/unsupported", "spec.generators[1].clusters.selector.matchExpressions", LeftOut, "matchLabels only"},
			{"ApplicationSet/argocd/unsupported", "spec.generators[2].git.files", LeftOut, "files generator"},
			{"ApplicationSet/argocd/matrix-addons", "spec.strategy", LeftOut, "spec.rollout"},
			{"AppProject/argocd/team-a", "spec.syncWindows[0]", LeftOut, "matches none of the imported releases"},
			{"AppProject/argocd/team-a", "spec.syncWindows[1]", Note, "became Window team-a-deny-window for the 2 releases"},
			{"AppProject/argocd/team-a", "spec.syncWindows[1].manualSync", Note, "--override"},
			{"AppProject/argocd/team-a", "spec.orphanedResources", LeftOut, "not converted"},
			{"AppProject/argocd/team-a", "spec.clusterResourceWhitelist[1]", LeftOut, "ClusterRole"},
			{"AppProject/argocd/team-b", "spec.destinationServiceAccounts", LeftOut, "does not exist yet"},
			{"AppProject/argocd/team-b", "spec.namespaceResourceWhitelist", LeftOut, "spec.kinds.deny"},
			{"Secret/argocd/private-repo", "", Action, `credentials "git-example-com"`},
			{"Secret/argocd/prod-eu-cluster", "", Action, "flotilla cluster add prod-eu -l argocd.argoproj.io/cluster=prod-eu -l env=production -l region=eu"},
			{"", "", Action, "argocd.argoproj.io/cluster=in-cluster"},
		}},
		{tc: 1, leftOut: true, lines: []line{
			{"ApplicationSet/argocd/cluster-addons", "spec.generators[0].git.directories", LeftOut, "--repo https://github.com/example/addons-repo.git=DIR"},
		}},
		{tc: 2, leftOut: false, lines: []line{
			{"", "", Action, "argocd.argoproj.io/cluster=prod-eu"},
		}},
		{tc: 3, leftOut: true, lines: []line{
			{"HelmRelease/flux-system/redis", "spec.chart", LeftOut, "helm template redis"},
			{"HelmRepository/flux-system/bitnami", "", LeftOut, "not a Flotilla source kind"},
			{"OCIRepository/flux-system/manifests", "", LeftOut, "not a Flotilla source kind"},
			{"Kustomization/flux-system/from-oci", "spec.sourceRef", LeftOut, "OCIRepository"},
			{"Kustomization/flux-system/podinfo", "spec.postBuild.substituteFrom[0]", LeftOut, "ConfigMap cluster-vars"},
			{"Kustomization/flux-system/podinfo", "spec.postBuild.substitute.bad-name", LeftOut, "bad-name"},
			{"Kustomization/flux-system/podinfo", "spec.dependsOn[1]", LeftOut, "not-imported"},
			{"Kustomization/flux-system/podinfo", "spec.patches", LeftOut, "kustomization.yaml"},
			{"Kustomization/apps/podinfo", "spec.serviceAccountName", LeftOut, "Project"},
			{"GitRepository/flux-system/podinfo", "spec.secretRef", Action, `credentials "podinfo-auth"`},
			{"GitRepository/flux-system/podinfo-pinned", "spec.url", LeftOut, "credentials"},
		}},
	}
	for _, tt := range tests {
		tc := cases[tt.tc]
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.input, tc.convert)
			if res.Report.LeftOut() != tt.leftOut {
				t.Errorf("LeftOut() = %v, want %v", res.Report.LeftOut(), tt.leftOut)
			}
			for _, want := range tt.lines {
				found := false
				for _, f := range res.Report.Findings {
					if f.Object == want.object && f.Field == want.field && f.Level == want.level && strings.Contains(f.Message+" "+f.Do, want.says) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s finding for %s %s saying %q", want.level, want.object, want.field, want.says)
				}
			}
			for _, f := range res.Report.Findings {
				if f.Level == LeftOut && (f.Object != "" && f.File == "") {
					t.Errorf("finding without a file: %+v", f)
				}
			}
		})
	}
}

// TestConversions checks converted values a user relies on.
func TestConversions(t *testing.T) {
	t.Parallel()
	argo := run(t, cases[0].input, cases[0].convert)
	flux := run(t, cases[3].input, cases[3].convert)
	rel := func(res *Result, name string) v1alpha1.ReleaseSpec {
		for _, r := range res.Releases {
			if r.Metadata.Name == name {
				return r.Spec
			}
		}
		t.Fatalf("no release %q", name)
		return v1alpha1.ReleaseSpec{}
	}
	src := func(res *Result, name string) v1alpha1.GitSource {
		for _, s := range res.Sources {
			if s.Metadata.Name == name {
				return *s.Spec.Git
			}
		}
		t.Fatalf("no source %q", name)
		return v1alpha1.GitSource{}
	}
	gb := rel(argo, "guestbook")
	checks := []struct {
		what      string
		got, want any
	}{
		{"guestbook prune", gb.Prune, true},
		{"guestbook selfHeal", *gb.SelfHeal, true},
		{"guestbook createNamespace", gb.CreateNamespace, true},
		{"guestbook namespace", gb.Namespace, "guestbook"},
		{"guestbook path", gb.Path, "guestbook"},
		{"guestbook target", gb.Targets[0].Selector.MatchLabels[ClusterLabel], "in-cluster"},
		{"guestbook ignore", fmt.Sprint(gb.Ignore), "[{{apps Deployment  } [/spec/replicas]}]"},
		{"guestbook respectManagers", fmt.Sprint(gb.RespectManagers), "[kube-controller-manager]"},
		{"billing-api tag", src(argo, gbSource(argo, "billing-api")).Tag, "v1.2.3"},
		{"billing-api credentials", src(argo, gbSource(argo, "billing-api")).Credentials, "git-example-com"},
		{"billing-api project", rel(argo, "billing-api").Project, "team-a"},
		{"billing-api target", rel(argo, "billing-api").Targets[0].Selector.MatchLabels[ClusterLabel], "prod-eu"},
		{"billing-api-2 target by server host", rel(argo, "billing-api-2").Targets[0].Selector.MatchLabels[ClusterLabel], "10.0.0.12-6443"},
		{"pinned commit", src(argo, gbSource(argo, "pinned")).Commit, "4f0b4c3a1e7c2d9b8a6f5e4d3c2b1a0f9e8d7c6b"},
		{"pinned scp URL gets the ssh repo-creds", src(argo, gbSource(argo, "pinned")).Credentials, "github-com-2"},
		{"semver", src(argo, gbSource(argo, "semver-app")).Semver, ">=1.0.0 <2.0.0"},
		{"list generator path", rel(argo, "engineering-prod-guestbook").Path, "applicationset/examples/list-generator/guestbook/engineering-prod"},
		{"cluster generator path", rel(argo, "addons").Path, `clusters/{{ .Cluster.Name }}/{{ index .Cluster.Labels "region" }}`},
		{"cluster generator target", fmt.Sprint(rel(argo, "addons").Targets[0].Selector.MatchLabels), "map[env:production]"},
		{"cluster generator values", src(argo, gbSource(argo, "addons")).Branch, "stable"},
		{"git directories expanded, excludes and hidden left out", gitDirReleases(argo), "backend,frontend"},
		{"matrix path", rel(argo, "frontend-2").Path, "apps/frontend/overlays/{{ .Cluster.Name }}"},
		{"sync window", fmt.Sprint(argo.Windows[0].Spec.Type, argo.Windows[0].Spec.Schedule, argo.Windows[0].Spec.Duration.Duration, argo.Windows[0].Spec.TimeZone, argo.Windows[0].Spec.Releases), "deny0 22 * * *8h0m0sEurope/Berlin[billing-api billing-api-2]"},
		{"flux path", rel(flux, "podinfo").Path, "kustomize"},
		{"flux targetNamespace", rel(flux, "podinfo").Namespace, "podinfo"},
		{"flux dependsOn", fmt.Sprint(rel(flux, "podinfo").DependsOn), "[infra-controllers]"},
		{"flux variables", fmt.Sprint(rel(flux, "podinfo").Variables), "map[cluster_env:prod cluster_region:eu-central-1]"},
		{"flux interval", rel(flux, "podinfo").Interval.Duration.String(), "10m0s"},
		{"flux suspend", rel(flux, "podinfo-2").Suspend, true},
		{"flux wait", rel(flux, "podinfo").Wait, true},
		{"flux semver", src(flux, "podinfo").Semver, ">=6.0.0 <7.0.0"},
		{"flux commit wins over branch", src(flux, "podinfo-pinned").Commit + src(flux, "podinfo-pinned").Branch, "363a6a8fe6a7f13e05d34c163b0ef02a777da20a"},
		{"flux URL without its password", src(flux, "podinfo-pinned").URL, "https://git.example.com/org/podinfo.git"},
		{"flux ssh user kept", src(flux, "flux-system").URL, "ssh://git@github.com/example/fleet-infra"},
		{"flux target", rel(flux, "podinfo").Targets[0].Selector.MatchLabels[FluxClusterLabel], "production"},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func gbSource(res *Result, release string) string {
	for _, r := range res.Releases {
		if r.Metadata.Name == release {
			return r.Spec.Source
		}
	}
	return ""
}

func gitDirReleases(res *Result) string {
	var names []string
	for _, r := range res.Releases {
		if r.Spec.Source == "addons-repo" && !strings.Contains(r.Spec.Path, "{{") {
			names = append(names, r.Metadata.Name)
		}
	}
	return strings.Join(names, ",")
}

// TestNoSecretValue: no value of any input Secret, nor the password of a URL, reaches the
// fleet files or either form of the report.
func TestNoSecretValue(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.input, tc.convert)
			files, err := res.Files()
			if err != nil {
				t.Fatal(err)
			}
			var text, js bytes.Buffer
			if err := res.Report.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := res.Report.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			files["report.txt"], files["report.json"] = text.Bytes(), js.Bytes()
			for n, data := range files {
				for _, marker := range []string{"SECRET-VALUE", base64.StdEncoding.EncodeToString([]byte("SECRET-VALUE"))[:12], "U0VDUkVU"} {
					if bytes.Contains(data, []byte(marker)) {
						t.Errorf("%s holds a secret value (%q)", n, marker)
					}
				}
			}
		})
	}
	// The inputs do hold the values: the test would see a leak.
	data, _ := os.ReadFile("testdata/argocd/secrets.yaml")
	if !bytes.Contains(data, []byte("SECRET-VALUE")) || !bytes.Contains(data, []byte("U0VDUkVU")) {
		t.Fatal("testdata/argocd/secrets.yaml lost its secret values")
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	res := run(t, cases[3].input, cases[3].convert)
	var b bytes.Buffer
	if err := res.Report.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got []Finding
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not a JSON array of findings: %v\n%s", err, b.String())
	}
	if len(got) != len(res.Report.Findings) || got[0].Level == "" || got[0].Message == "" {
		t.Errorf("JSON report has %d findings, want %d: %s", len(got), len(res.Report.Findings), b.String())
	}
	b.Reset()
	if err := (&Report{}).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("an empty report is %q, want []", b.String())
	}
}

// TestLimits: every bound refuses its input with a message that names it.
func TestLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lim := Limits{MaxFiles: 3, MaxFileBytes: 1000, MaxTotalBytes: 1500, MaxDepth: 10, MaxDocuments: 5}
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\n"
	tests := []struct {
		name, path, want string
	}{
		{"file too large", write("big/a.yaml", app+"# "+strings.Repeat("x", 1000)), "larger than 1000 bytes"},
		{"flow nesting too deep", write("flow/a.yaml", app+"spec: "+strings.Repeat("[", 50)+strings.Repeat("]", 50)), "nested too deeply"},
		{"flow nesting after an apostrophe", write("apos/a.yaml", app+"spec: {note: don't "+strings.Repeat("[", 50)+strings.Repeat("]", 50)+"}\n"), "nested too deeply"},
		{"block nesting too deep", write("block/a.yaml", app+blockNest(12)), "nested too deeply"},
		{"too many files", func() string {
			for i := range 4 {
				write(fmt.Sprintf("many/%d.yaml", i), app)
			}
			return filepath.Join(dir, "many")
		}(), "more than 3 YAML/JSON files"},
		{"too many bytes", func() string {
			for i := range 2 {
				write(fmt.Sprintf("bytes/%d.yaml", i), app+"# "+strings.Repeat("x", 800))
			}
			return filepath.Join(dir, "bytes")
		}(), "more than 1500 bytes"},
		{"too many objects", write("docs/a.yaml", strings.Repeat(app+"---\n", 6)), "more than 5 objects"},
		{"missing input", filepath.Join(dir, "nope"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadInputs(tt.path, lim, &Report{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
			if tt.name == "flow nesting too deep" && !errors.Is(err, errTooDeep) {
				t.Errorf("error %v is not errTooDeep", err)
			}
		})
	}
	// Within the bounds, the same shapes are read.
	ok := write("ok/a.yaml", app+blockNest(5))
	if objs, err := ReadInputs(ok, lim, &Report{}); err != nil || len(objs) != 1 {
		t.Errorf("a document within the bounds: %d objects, %v", len(objs), err)
	}
}

func blockNest(n int) string {
	var b strings.Builder
	b.WriteString("spec:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat("  ", i), i)
	}
	fmt.Fprintf(&b, "%sv: 1\n", strings.Repeat("  ", n+1))
	return b.String()
}

func TestBadDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("foo: [unclosed\n---\njust: a map\n---\n- a list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &Report{}
	objs, err := ReadInputs(dir, DefaultLimits(), rep)
	if err != nil || len(objs) != 0 {
		t.Fatalf("objects %d, err %v", len(objs), err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"document 1: not valid YAML", "document 2: not a Kubernetes object", "document 3: not a Kubernetes object"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"guestbook", "guestbook"},
		{"Billing_API", "billing-api"},
		{"--a..b--", "a-b"},
		{"", "release"},
		{"___", "release"},
		{strings.Repeat("a", 70), strings.Repeat("a", 63)},
		{strings.Repeat("a", 62) + "-b", strings.Repeat("a", 62)},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in, "release"); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	n := newNames()
	rep := &Report{}
	o := &Object{File: "f.yaml", Kind: "Application", Name: "x"}
	long := strings.Repeat("a", 63)
	got := []string{n.assign("Release", "web", rep, o, ""), n.assign("Release", "web", rep, o, ""), n.assign("Release", "WEB", rep, o, ""),
		n.assign("Release", long, rep, o, ""), n.assign("Release", long, rep, o, ""), n.assign("Source", "web", rep, o, "")}
	want := []string{"web", "web-2", "web-3", long, strings.Repeat("a", 61) + "-2", "web"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if len(rep.Findings) != 3 {
		t.Errorf("%d findings for 3 changed names: %+v", len(rep.Findings), rep.Findings)
	}
}

func TestSubstitute(t *testing.T) {
	t.Parallel()
	cluster := paramSet{vals: map[string]string{"path": "apps/a", "path.basename": "a", "path.segments[1]": "a", "values.x": "y"}, cluster: &v1alpha1.LabelSelector{}}
	tests := []struct {
		in    string
		goTpl bool
		want  string
	}{
		{"{{path}}/x", false, "apps/a/x"},
		{"{{ path.basename }}", false, "a"},
		{"{{name}}-{{values.x}}", false, "{{ .Cluster.Name }}-y"},
		{"{{server}}", false, "\x00{{server}}\x00"},
		{"{{.path.basename}}", true, "a"},
		{"{{- .name -}}", true, "{{ .Cluster.Name }}"},
		{"{{index .path.segments 1}}", true, "a"},
		{`{{index .metadata.labels "region"}}`, true, `{{ index .Cluster.Labels "region" }}`},
		{"{{.metadata.labels.env}}", true, `{{ index .Cluster.Labels "env" }}`},
		{"{{ .name | normalize }}", true, "\x00{{ .name | normalize }}\x00"},
		{"{{.metadata.annotations.a}}", true, "\x00{{.metadata.annotations.a}}\x00"},
	}
	for _, tt := range tests {
		if got := substitute(tt.in, cluster, tt.goTpl); got != tt.want {
			t.Errorf("substitute(%q, goTemplate %v) = %q, want %q", tt.in, tt.goTpl, got, tt.want)
		}
	}
}

func TestWriteRefusesHandWrittenFiles(t *testing.T) {
	t.Parallel()
	res := run(t, cases[2].input, cases[2].convert)
	dir := t.TempDir()
	if _, err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	// A second import overwrites its own files.
	if _, err := res.Write(dir); err != nil {
		t.Fatalf("rewriting imported files: %v", err)
	}
	mine := filepath.Join(dir, ReleasesFile)
	if err := os.WriteFile(mine, []byte("# my releases\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := res.Write(dir)
	if err == nil || !strings.Contains(err.Error(), "was not written by flotilla import") {
		t.Fatalf("error = %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(mine); string(data) != "# my releases\n" {
		t.Errorf("the hand-written file was changed: %q", data)
	}
}
