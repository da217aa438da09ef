package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the plan tests")

// planRepo is one Git repository holding the fleet (fleet/) and the manifests its source
// apps reads (regions/, base/), as a fleet monorepo does.
type planRepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
	n    int
}

func newPlanRepo(t *testing.T, dir string) *planRepo {
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		t.Fatal(err)
	}
	return &planRepo{t: t, dir: dir, repo: r}
}

// commit writes files (content "" removes one) on branch, starting it from main when new,
// and commits at a fixed time so that commit hashes, and the golden file, are stable.
func (p *planRepo) commit(branch string, files map[string]string) {
	t := p.t
	wt, err := p.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if head, err := p.repo.Head(); err == nil && head.Name() != ref {
		_, exists := p.repo.Reference(ref, false)
		if err := wt.Checkout(&git.CheckoutOptions{Branch: ref, Create: exists != nil, Keep: false}); err != nil {
			t.Fatalf("checkout %s: %v", branch, err)
		}
	}
	for name, content := range files {
		full := filepath.Join(p.dir, filepath.FromSlash(name))
		if content == "" {
			if _, err := wt.Remove(name); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	p.n++
	when := time.Date(2026, 1, 2, 3, 4, p.n, 0, time.UTC)
	sig := &object.Signature{Name: "plan-test", Email: "plan@flotilla.dev", When: when}
	if _, err := wt.Commit(fmt.Sprintf("commit %d on %s", p.n, branch), &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true}); err != nil {
		t.Fatal(err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("main")}); err != nil {
		t.Fatalf("checkout main: %v", err)
	}
}

func configMap(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: apps\ndata:\n  %s: %q\n  region: ${cluster_label_region}\n", name, key, value)
}

const planFleetMain = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata:
  name: apps
spec:
  git:
    url: file://%s
    branch: main
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: web
spec:
  source: apps
  path: regions/{{ .Cluster.Labels.region }}
  targets:
    - selector: {}
  namespace: apps
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: baseline
spec:
  source: apps
  path: base
  targets:
    - selector: {}
  namespace: apps
`

// planFixture is a hub reading its fleet from the repository's main branch, with five
// clusters, three in region eu and two in us (label webdir: eu, and us-v2), and every
// assignment written.
type planFixture struct {
	repo           *planRepo
	api, token, ca string
	st             store.Store
	dataDir        string
}

var planClusters = []struct{ name, region string }{
	{"eu-1", "eu"}, {"eu-2", "eu"}, {"eu-3", "eu"}, {"us-1", "us"}, {"us-2", "us"},
}

func startPlanHub(t *testing.T) *planFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	repoDir := filepath.Join(dir, "repo")
	p := newPlanRepo(t, repoDir)
	fleet := fmt.Sprintf(planFleetMain, repoDir)
	p.commit("main", map[string]string{
		"fleet/fleet.yaml":        fleet,
		"regions/eu/web.yaml":     configMap("web", "replicas", "2"),
		"regions/us/web.yaml":     configMap("web", "replicas", "2"),
		"regions/us-v2/web.yaml":  configMap("web", "replicas", "3"),
		"base/baseline.yaml":      configMap("baseline", "level", "info"),
		"base/secret.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: apps\nstringData:\n  token: s3cret-main\n",
		"regions/eu/.keep.yaml.x": "x",
	})

	dataDir := filepath.Join(dir, "hub")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range planClusters {
		labels := map[string]string{"region": c.region, "webdir": map[string]string{"eu": "eu", "us": "us-v2"}[c.region]}
		if err := st.AddCluster(ctx, store.Cluster{Name: c.name, Labels: labels, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := hub.New(ctx, hub.Options{DataDir: dataDir, Fleet: "file://" + repoDir, FleetBranch: "main", FleetPath: "fleet",
		AllowFileSources: []string{repoDir}, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0"}, st)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hub: %v", err)
		}
		st.Close()
	})
	// Wait for the hub to assign both releases to every cluster (no timed assertion: the
	// timeout only ends a test that would hang).
	eventually.Within(t, 30*time.Second, func() error {
		for _, c := range planClusters {
			ds, err := st.GetDesiredState(ctx, c.name)
			var as []desired.Assignment
			if err == nil {
				as, err = desired.Decode(ds.Document)
			}
			if err != nil || len(as) != 2 {
				fs, _ := st.GetFleetStatus(ctx)
				ss, _ := st.ListSourceStatuses(ctx)
				return fmt.Errorf("cluster %s: %d releases assigned (%v), want both (fleet %+v, sources %+v)", c.name, len(as), err, fs, ss)
			}
		}
		return nil
	})
	return &planFixture{repo: p, api: h.APIURL(), token: h.AdminToken(), ca: h.CAPath(), st: st, dataDir: dataDir}
}

func (f *planFixture) run(t *testing.T, wantCode int, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"plan"}, args...)
	all = append(all, "--hub", f.api, "--token", f.token, "--ca", f.ca)
	if code := Run(t.Context(), all, &out, &errOut); code != wantCode {
		t.Fatalf("flotilla plan %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, wantCode, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// groupSummary reads "release change: cluster,cluster [objects]" per group, for assertions.
func groupSummary(p hubclient.Plan) []string {
	var out []string
	for _, g := range p.Groups {
		var objs []string
		for _, o := range g.Objects {
			objs = append(objs, o.Action+" "+objectName(o))
		}
		s := fmt.Sprintf("%s %s: %s [%s]", g.Release, g.Change, strings.Join(g.Clusters, ","), strings.Join(objs, "; "))
		if g.Waiting != "" {
			s += " waits"
		}
		out = append(out, s)
	}
	return out
}

// TestPlan plans branches of a fleet monorepo against a real hub: a branch that changes a
// path template and one manifest lists exactly the affected clusters and objects, grouped;
// an unchanged branch and an unchanged upload plan to nothing; an invalid candidate is
// reported with its file and line.
func TestPlan(t *testing.T) {
	t.Parallel()
	f := startPlanHub(t)
	repoDir := f.repo.dir
	// Nothing a plan does is stored: no desired state changes, no artifact is added, and
	// the plans' temporary files are gone.
	stored := func() string {
		states, err := f.st.ListDesiredStates(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range states {
			fmt.Fprintf(&b, "%s@%d %x\n", s.Cluster, s.Generation, s.Document)
		}
		arts, _ := filepath.Glob(filepath.Join(f.dataDir, "artifacts", "*", "*"))
		plans, _ := filepath.Glob(filepath.Join(f.dataDir, "plan-*"))
		return b.String() + strings.Join(arts, "\n") + "\n" + strings.Join(plans, "\n")
	}
	before := stored()
	defer func() {
		if after := stored(); after != before {
			t.Errorf("the plans changed what the hub stores:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}()
	fleetMain := fmt.Sprintf(planFleetMain, repoDir)
	// feature: web's path template sends the us clusters to regions/us-v2 (replicas 3), and
	// the baseline manifest changes for every cluster; a deny window holds web back in us.
	featureFleet := strings.Replace(fleetMain, "path: regions/{{ .Cluster.Labels.region }}",
		`path: regions/{{ .Cluster.Labels.webdir }}`, 1) + `---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata:
  name: us-business-hours
spec:
  type: deny
  schedule: "* * * * *"
  duration: 1h
  releases: [web]
  clusterSelector:
    matchLabels: {region: us}
`
	f.repo.commit("feature", map[string]string{
		"fleet/fleet.yaml":   featureFleet,
		"base/baseline.yaml": configMap("baseline", "level", "debug"),
		"base/secret.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: apps\nstringData:\n  token: s3cret-feature\n",
	})
	f.repo.commit("same", map[string]string{"README.md": "nothing the fleet reads\n"})

	t.Run("a path template and a manifest change", func(t *testing.T) {
		out, _ := f.run(t, 1, "--fleet", "ref:feature", "--source", "apps=feature", "-o", "json")
		var p hubclient.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, out)
		}
		want := []string{
			// The baseline ConfigMap holds the cluster's region: one diff per region.
			"baseline changed: eu-1,eu-2,eu-3 [changed ConfigMap/apps/baseline; changed Secret/apps/token]",
			"baseline changed: us-1,us-2 [changed ConfigMap/apps/baseline; changed Secret/apps/token]",
			"web changed: us-1,us-2 [changed ConfigMap/apps/web] waits",
		}
		if got := groupSummary(p); !slices.Equal(got, want) {
			t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !p.Changes || p.Errors || p.Summary.ClustersChanged != 5 || p.Summary.Changed != 7 || p.Summary.Waiting != 2 {
			t.Errorf("summary: changes %v errors %v %+v", p.Changes, p.Errors, p.Summary)
		}
		web := p.Groups[2]
		if !slices.Contains(web.Assignment, "path: regions/us -> regions/us-v2") || !strings.Contains(web.Waiting, "us-business-hours") {
			t.Errorf("web group: assignment %q, waiting %q", web.Assignment, web.Waiting)
		}
		if d := web.Objects[0].Diff; !strings.Contains(d, "-  replicas: \"2\"\n+  replicas: \"3\"\n") {
			t.Errorf("web diff:\n%s", d)
		}
		if strings.Contains(out, "s3cret") {
			t.Errorf("the plan shows a Secret's value:\n%s", out)
		}
		if d := p.Groups[0].Objects[1].Diff; !strings.Contains(d, "+  token: (redacted, changed)") {
			t.Errorf("secret diff:\n%s", d)
		}

		text, _ := f.run(t, 1, "--fleet", "ref:feature", "--source", "apps=feature")
		for _, want := range []string{
			"2 releases change on 5 of 5 clusters: 0 assignments gained, 0 lost, 7 changed; 2 wait for a window", "baseline changed on 3 clusters: eu-1, eu-2, eu-3\n",
			"web changed on 2 clusters: us-1, us-2\n  path: regions/us -> regions/us-v2\n",
			"  waits: window \"us-business-hours\"", "  changed ConfigMap/apps/web\n    --- a/ConfigMap/apps/web\n",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("plan -o text does not say %q:\n%s", want, text)
			}
		}

		md, _ := f.run(t, 1, "--fleet", "ref:feature", "--source", "apps=feature", "-o", "markdown")
		checkGolden(t, "plan-feature.md", md, repoDir)
		if len(md) > commentLimit {
			t.Errorf("markdown of %d characters: over the comment limit", len(md))
		}
	})

	t.Run("an unchanged branch plans to nothing", func(t *testing.T) {
		out, _ := f.run(t, 0, "--fleet", "ref:same")
		if !strings.Contains(out, "No changes: 5 clusters run the same with the candidate.") {
			t.Errorf("plan of an unchanged branch:\n%s", out)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleetMain), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, _ := f.run(t, 0, "--fleet", dir, "-o", "markdown"); !strings.Contains(out, "**No changes: 5 clusters") {
			t.Errorf("plan of the uploaded configuration in force:\n%s", out)
		}
	})

	t.Run("an uploaded candidate that drops a release", func(t *testing.T) {
		dir := t.TempDir()
		only, _, ok := strings.Cut(fleetMain, "---\napiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata:\n  name: baseline")
		if !ok {
			t.Fatal("fleetMain has no baseline release to drop")
		}
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(only), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := f.run(t, 1, "--fleet", dir, "-o", "json")
		var p hubclient.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"baseline lost: eu-1,eu-2,eu-3 [removed ConfigMap/apps/baseline; removed Secret/apps/token]",
			"baseline lost: us-1,us-2 [removed ConfigMap/apps/baseline; removed Secret/apps/token]",
		}
		if got := groupSummary(p); !slices.Equal(got, want) {
			t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("an invalid candidate", func(t *testing.T) {
		dir := t.TempDir()
		bad := strings.Replace(fleetMain, "  source: apps\n  path: base", "  source: nope\n  path: base", 1) + "---\nkind: Release\nmetadata: {name: [x\n"
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := f.run(t, 2, "--fleet", dir)
		for _, want := range []string{"invalid: fleet.yaml:", "Release/baseline", `"nope"`} {
			if !strings.Contains(out, want) {
				t.Errorf("plan of an invalid candidate does not say %q:\n%s", want, out)
			}
		}
		if !regexp.MustCompile(`invalid: fleet\.yaml:\d+: `).MatchString(out) {
			t.Errorf("no file:line in:\n%s", out)
		}
	})

	t.Run("a render error", func(t *testing.T) {
		f.repo.commit("undefined", map[string]string{"base/baseline.yaml": configMap("baseline", "level", "${log_level}")})
		out, _ := f.run(t, 2, "--fleet", "ref:main", "--source", "apps=undefined")
		if !strings.Contains(out, "undefined variable") || !strings.Contains(out, "log_level") || !strings.Contains(out, "base/baseline.yaml") {
			t.Errorf("plan with an undefined variable:\n%s", out)
		}
	})

	t.Run("a viewer of one project sees its releases only", func(t *testing.T) {
		admin := f.token
		defer func() { f.token = admin }()
		token := func(project string) string {
			var out, errOut bytes.Buffer
			args := []string{"token", "create", "ci-" + project, "--role", "viewer", "--project", project, "-o", "json",
				"--hub", f.api, "--token", admin, "--ca", f.ca}
			if code := Run(t.Context(), args, &out, &errOut); code != 0 {
				t.Fatalf("token create: exit %d: %s", code, errOut.String())
			}
			var v struct{ Token string }
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Token == "" {
				t.Fatalf("token create -o json: %v: %s", err, out.String())
			}
			return v.Token
		}
		// The fleet's releases are in the built-in platform project: a viewer of team-x may
		// not plan a change of them, nor read the platform's source at another ref.
		f.token = token("team-x")
		out, errOut := f.run(t, 2, "--fleet", "ref:feature", "--source", "apps=feature")
		if !strings.Contains(out+errOut, "plan refused: ") || !strings.Contains(out+errOut, "outside your projects [team-x]") &&
			!strings.Contains(out+errOut, "none of your projects [team-x] may use source apps") &&
			!strings.Contains(out+errOut, "only a caller of every project may plan changes to Windows; your projects are [team-x]") {
			t.Errorf("plan by a viewer of team-x:\n%s%s", out, errOut)
		}
		// A viewer of the platform project alone is scoped too: the branch adds a Window,
		// which only a caller of every project may plan.
		f.token = token("platform")
		out, errOut = f.run(t, 2, "--fleet", "ref:feature", "--source", "apps=feature", "-o", "json")
		if want := "plan refused: Window us-business-hours added: only a caller of every project may plan changes to Windows; your projects are [platform]"; !strings.Contains(out+errOut, want) {
			t.Errorf("plan by a viewer of platform:\n%s%s\nwant %q", out, errOut, want)
		}
	})

	t.Run("a source at a repository the fleet does not read", func(t *testing.T) {
		dir := t.TempDir()
		other := strings.Replace(fleetMain, "url: file://"+repoDir, "url: https://git.example.com/unmerged.git", 1)
		if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(other), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := f.run(t, 2, "--fleet", dir)
		if want := "source: source apps: https://git.example.com/unmerged.git is not a repository of the fleet in force; a plan reads only those"; !strings.Contains(out, want) {
			t.Errorf("plan with a source of another repository:\n%s\nwant %q", out, want)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{nil, "--fleet is required"},
			{[]string{"--fleet", "ref:"}, "--fleet ref: needs a branch"},
			{[]string{"--fleet", "ref:main", "--source", "apps"}, `--source "apps": want NAME=REF`},
			{[]string{"--fleet", filepath.Join(t.TempDir(), "nope")}, "no such file or directory"},
			{[]string{"--fleet", "ref:no-such-branch"}, "fleet repository at no-such-branch"},
			{[]string{"--fleet", "ref:main", "--source", "other=main"}, `the candidate has no source "other"`},
			{[]string{"--fleet", "ref:--upload-pack=x"}, `ref "--upload-pack=x": want a branch name or a full commit`},
		} {
			_, errOut := f.run(t, 2, tt.args...)
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("plan %q: %s\nwant %q", tt.args, errOut, tt.want)
			}
		}
	})
}

// checkGolden compares got (with the test's temporary paths, commits and the window's
// times, which vary from run to run, replaced) with testdata/name; -update rewrites it.
func checkGolden(t *testing.T, name, got, repoDir string) {
	t.Helper()
	got = strings.ReplaceAll(got, repoDir, "REPO")
	got = regexp.MustCompile(`\b\d\d:\d\d\b`).ReplaceAllString(got, "HH:MM")
	got = regexp.MustCompile(`\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) HH:MM`).ReplaceAllString(got, "DAY HH:MM")
	// The fleet file names the repository's temporary path, so commits differ per run.
	got = regexp.MustCompile(`\b[0-9a-f]{40}\b`).ReplaceAllString(got, "COMMIT")
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("markdown differs from %s (run with -update after checking):\n%s", path, got)
	}
}

func TestPlanHelp(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), []string{"plan", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("plan --help: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Examples:", "flotilla plan --fleet ref:feature/eu-paths --source apps=feature/eu-paths -o markdown", "Exit status: 0 nothing changes, 1 something changes, 2 errors"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan --help does not contain %q:\n%s", want, out.String())
		}
	}
}

// TestPlanMarkdownLimit: a plan far larger than a pull-request comment is cut under
// GitHub's limit, at a group's end, and says what was left out.
func TestPlanMarkdownLimit(t *testing.T) {
	t.Parallel()
	p := hubclient.Plan{Candidate: "upload", Revision: "r1", Changes: true, Truncated: []string{"12 more groups of changes"}}
	for i := range 300 {
		p.Groups = append(p.Groups, hubclient.PlanGroup{Release: fmt.Sprintf("r%03d", i), Change: hubclient.PlanChanged,
			Clusters: []string{"c1"}, ClusterCount: 1, Objects: []hubclient.PlanObject{{Action: hubclient.ObjectChanged, Kind: "ConfigMap",
				Name: "x", Diff: strings.Repeat("+ a line of a diff with `backticks```\n", 250)}}})
	}
	md := planMarkdown(p)
	if len(md) > commentLimit {
		t.Errorf("markdown of %d characters, over %d", len(md), commentLimit)
	}
	for _, want := range []string{"| … | | | | 200 more groups |", "**Left out:**", "- 12 more groups of changes",
		"groups (the comment limit); run `flotilla plan -o text` for everything", "````diff"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown does not contain %q", want)
		}
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Errorf("a collapsible section is cut in the middle")
	}
}

// TestReadCandidate: the upload of a candidate directory is bounded, and says why not.
func TestReadCandidate(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, dir string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	manyFiles := map[string]string{}
	for i := range planMaxFiles + 1 {
		manyFiles[fmt.Sprintf("f%04d.yaml", i)] = "x"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string // the files read
		err   string
	}{
		{name: "configuration files only, hidden ones skipped",
			files: map[string]string{"a.yaml": "a", "sub/b.yml": "b", "c.json": "{}", "README.md": "r", ".hidden.yaml": "h", ".git/x.yaml": "g"},
			want:  []string{"a.yaml", "c.json", "sub/b.yml"}},
		{name: "none", files: map[string]string{"README.md": "r"}, err: "no .yaml, .yml or .json files"},
		{name: "too many files", files: manyFiles, err: "more than 1000 configuration files: a plan uploads at most 1000"},
		{name: "too many bytes", files: map[string]string{"a.yaml": strings.Repeat("x", 5<<20), "b.yaml": strings.Repeat("x", 4<<20)},
			err: "the configuration files hold more than 8388608 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tt.files)
			got, err := readCandidate(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, tt.want) {
				t.Errorf("read %q, want %q", names, tt.want)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	write(t, filepath.Dir(file), map[string]string{"fleet.yaml": "x"})
	if _, err := readCandidate(file); err == nil || !strings.Contains(err.Error(), "not a directory (for a ref of the hub's fleet repository, write ref:") {
		t.Errorf("a file as --fleet: %v", err)
	}
}
