package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// gitRepo is a real Git repository on disk with a main branch.
type gitRepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		t.Fatal(err)
	}
	return &gitRepo{t: t, dir: dir, repo: r}
}

// commit writes file (a path in the repository) and commits it; it returns the commit hash.
func (g *gitRepo) commit(file, content string) string {
	t := g.t
	t.Helper()
	full := filepath.Join(g.dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := g.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("change "+file, &git.CommitOptions{Author: &object.Signature{Name: "Team", Email: "team@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func (g *gitRepo) url() string { return "file://" + g.dir }

// tenantRelease is a Release document of a tenant fleet.
func tenantRelease(name, source, extra string) string {
	return fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: %s}\nspec:\n  source: %s\n  namespace: %s\n  targets: [{selector: {}}]\n%s",
		name, source, strings.SplitN(name, "-", 3)[0]+"-"+strings.SplitN(name, "-", 3)[1], extra)
}

func tenantSource(name, url string) string {
	return fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata: {name: %s}\nspec:\n  git: {url: '%s'}\n---\n", name, url)
}

// failingPoller is a real poller that cannot reach the URLs containing down.
type failingPoller struct {
	*source.Poller
	down string
}

func (p failingPoller) Resolve(ctx context.Context, g source.Git) (source.Resolved, error) {
	if strings.Contains(g.URL, p.down) {
		return source.Resolved{}, fmt.Errorf("source '%s': dial tcp: connection refused", g.Name)
	}
	return p.Poller.Resolve(ctx, g)
}

// Two teams each have their own fleet repository. A commit of team-a's with a release for
// another project is rejected alone: team-a's last valid configuration stays in force and
// scheduled, team-b's and the main fleet's are untouched, and the problem names the file at
// the commit. A fix is taken; a hub that restarts while the repository cannot be read keeps
// team-a's assignments rather than pruning them.
func TestTenantFleets(t *testing.T) {
	t.Parallel()
	tenantA, tenantB := newGitRepo(t), newGitRepo(t)
	apps := t.TempDir() // the teams' application repositories live under here
	mainDir := t.TempDir()
	mainFleet := fleetYAML + fmt.Sprintf(`---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: ['file://%[1]s/team-a-*']
  namespaces: [team-a]
  serviceAccount: {namespace: team-a, name: deployer}
  fleet: {url: '%[2]s', branch: main, path: fleet}
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-b}
spec:
  sources: ['file://%[1]s/team-b-*']
  namespaces: [team-b]
  serviceAccount: {namespace: team-b, name: deployer}
  fleet: {url: '%[3]s', branch: main}
---
apiVersion: flotilla.dev/v1alpha1
kind: Window
metadata: {name: nights}
spec: {type: allow, schedule: "0 22 * * *", duration: 8h}
`, apps, tenantA.url(), tenantB.url())
	if err := os.WriteFile(filepath.Join(mainDir, "fleet.yaml"), []byte(mainFleet), 0o644); err != nil {
		t.Fatal(err)
	}
	good := tenantA.commit("fleet/fleet.yaml", tenantSource("team-a-app", "file://"+apps+"/team-a-app")+tenantRelease("team-a-web", "team-a-app", ""))
	tenantB.commit("fleet.yaml", tenantSource("team-b-app", "file://"+apps+"/team-b-app")+tenantRelease("team-b-api", "team-b-app", ""))

	st := &statusStore{fakeStore: &fakeStore{
		clusters: []store.Cluster{{Name: "c1", Labels: map[string]string{"env": "production"}}},
		docs:     map[string]store.DesiredState{}, fail: map[string]int{},
	}}
	arts, err := artifact.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	newController := func(p Poller) *Controller {
		c, err := New(Deps{Store: st, Poller: p, Artifacts: arts, Lease: heldLease{}, Clock: clock.NewFake(time.Unix(0, 0))},
			Options{Fleet: mainDir, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		// The sources' polls are not what this test is about: every source has an artifact.
		for i, s := range []string{"platform", "team-a-app", "team-b-app"} {
			c.artifacts[s] = schedule.Artifact{Source: s, Revision: "main@sha1:" + s, Digest: fmt.Sprintf("sha256:%064d", i)}
		}
		return c
	}
	c := newController(source.NewPoller(t.TempDir()))
	step := func() {
		t.Helper()
		c.loadFleets(t.Context())
		c.reschedule(t.Context())
	}
	assigned := func() map[string]string { // release -> project
		t.Helper()
		doc, _ := st.doc(t, "c1")
		out := map[string]string{}
		for _, a := range doc.Assignments {
			out[a.Release] = ""
			if a.Project != nil {
				out[a.Release] = a.Project.Name
			}
		}
		if len(doc.Removed) > 0 {
			t.Errorf("c1 has tombstones: %+v", doc.Removed)
		}
		return out
	}
	wantAssigned := map[string]string{"baseline": "", "team-a-web": "team-a", "team-b-api": "team-b"}

	step()
	if got := assigned(); fmt.Sprint(got) != fmt.Sprint(wantAssigned) {
		t.Fatalf("assigned %v, want %v", got, wantAssigned)
	}
	if p := c.View().Problems; len(p) != 0 {
		t.Fatalf("problems with valid tenant fleets: %v", p)
	}
	// The main fleet's windows hold with tenants' fleets merged in.
	if doc, _ := st.doc(t, "c1"); len(doc.Gates) != 1 || doc.Gates[0].Name != "nights" {
		t.Errorf("c1's gates with tenant fleets: %+v, want the window nights", doc.Gates)
	}

	t.Run("a release for another project rejects that tenant's configuration alone", func(t *testing.T) {
		bad := tenantA.commit("fleet/fleet.yaml", tenantSource("team-a-app", "file://"+apps+"/team-a-app")+tenantRelease("team-a-web", "team-a-app", "")+
			"---\n"+tenantRelease("team-a-sneaky", "team-a-app", "  project: team-b\n"))
		step()
		step() // the same rejected commit is not reported twice
		if got := assigned(); fmt.Sprint(got) != fmt.Sprint(wantAssigned) {
			t.Errorf("assigned %v, want the last valid configuration's %v", got, wantAssigned)
		}
		want := fmt.Sprintf(`project team-a's fleet repository rejected (commit %s stays in force): fleet/fleet.yaml@%s line 15: Release/team-a-sneaky: spec.project: the release belongs to project "team-b", but this is the fleet repository of project team-a: it may hold only team-a's releases`, good[:7], bad[:7])
		if p := c.View().Problems; len(p) != 1 || p[0].Message != want || p[0].Project != "team-a" {
			t.Errorf("problems:\n%+v\nwant one of project team-a:\n%s", p, want)
		}
		if st.fleet.Error != "" {
			t.Errorf("the main fleet's status has an error: %s", st.fleet.Error)
		}
	})

	t.Run("a name the main fleet defines is refused", func(t *testing.T) {
		tenantA.commit("fleet/fleet.yaml", tenantSource("team-a-app", "file://"+apps+"/team-a-app")+
			strings.Replace(tenantRelease("team-a-web", "team-a-app", ""), "name: team-a-web", "name: baseline", 1))
		step()
		if got := assigned(); fmt.Sprint(got) != fmt.Sprint(wantAssigned) {
			t.Errorf("assigned %v, want %v", got, wantAssigned)
		}
		if p := c.View().Problems; len(p) != 1 || !strings.Contains(p[0].Message, `Release/baseline: metadata.name: Release "baseline" is already defined by the main fleet`) {
			t.Errorf("problems: %v", p)
		}
	})

	t.Run("a fix is taken", func(t *testing.T) {
		tenantA.commit("fleet/fleet.yaml", tenantSource("team-a-app", "file://"+apps+"/team-a-app")+tenantRelease("team-a-web", "team-a-app", "")+
			"---\n"+tenantRelease("team-a-worker", "team-a-app", ""))
		step()
		want := map[string]string{"baseline": "", "team-a-web": "team-a", "team-a-worker": "team-a", "team-b-api": "team-b"}
		if got := assigned(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("assigned %v, want %v", got, want)
		}
		if p := c.View().Problems; len(p) != 0 {
			t.Errorf("problems after the fix: %v", p)
		}
		wantAssigned = want
	})

	t.Run("a narrowed Project has its repository checked again; the configuration in force stays", func(t *testing.T) {
		narrowed := strings.Replace(mainFleet, "namespaces: [team-b]", "namespaces: [team-b-new]", 1)
		if err := os.WriteFile(filepath.Join(mainDir, "fleet.yaml"), []byte(narrowed), 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := os.WriteFile(filepath.Join(mainDir, "fleet.yaml"), []byte(mainFleet), 0o644); err != nil {
				t.Fatal(err)
			}
			step()
		}()
		step()
		if got := assigned(); fmt.Sprint(got) != fmt.Sprint(wantAssigned) {
			t.Errorf("assigned %v, want %v", got, wantAssigned)
		}
		p := c.View().Problems
		var texts []string
		for _, pr := range p {
			texts = append(texts, pr.Message)
		}
		joined := strings.Join(texts, "\n")
		if !strings.Contains(joined, `project team-b's fleet repository rejected (commit `) ||
			!strings.Contains(joined, `Release/team-b-api: spec.namespace: project team-b does not allow namespace "team-b" (spec.namespaces)`) {
			t.Errorf("problems:\n%s", joined)
		}
	})

	t.Run("a restarted hub that cannot read a tenant repository prunes nothing of it", func(t *testing.T) {
		c = newController(failingPoller{Poller: source.NewPoller(t.TempDir()), down: tenantA.dir})
		step()
		if got := assigned(); fmt.Sprint(got) != fmt.Sprint(wantAssigned) {
			t.Errorf("assigned %v, want %v", got, wantAssigned)
		}
		if p := c.View().Problems; len(p) != 1 || !strings.Contains(p[0].Message, "project team-a's fleet repository rejected (no configuration of it is in force yet): fleet repository file://") {
			t.Errorf("problems: %v", p)
		}
	})
}
