package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name, x, y, want string
	}{
		{name: "equal", x: "a\nb\n", y: "a\nb\n", want: ""},
		{name: "one line changed", x: "a\nb\nc\n", y: "a\nB\nc\n",
			want: "--- x\n+++ y\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{name: "added to nothing", x: "", y: "a\nb\n", want: "--- x\n+++ y\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{name: "removed to nothing", x: "a\n", y: "", want: "--- x\n+++ y\n@@ -1,1 +0,0 @@\n-a\n"},
		{name: "two hunks far apart",
			x:    lines(20, func(i int) string { return fmt.Sprint(i) }),
			y:    lines(20, func(i int) string { return map[int]string{1: "one", 18: "eighteen"}[i] + fmt.Sprint(i) }),
			want: "--- x\n+++ y\n@@ -1,5 +1,5 @@\n 0\n-1\n+one1\n 2\n 3\n 4\n@@ -16,5 +16,5 @@\n 15\n 16\n 17\n-18\n+eighteen18\n 19\n"},
		{name: "close changes share a hunk",
			x:    lines(8, func(i int) string { return fmt.Sprint(i) }),
			y:    lines(8, func(i int) string { return map[int]string{2: "x", 5: "y"}[i] + fmt.Sprint(i) }),
			want: "--- x\n+++ y\n@@ -1,8 +1,8 @@\n 0\n 1\n-2\n+x2\n 3\n 4\n-5\n+y5\n 6\n 7\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := unifiedDiff(tt.x, tt.y, "x", "y"); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// artifactDirs writes one directory per "digest" and returns the Dir function over them.
func artifactDirs(t testing.TB, trees map[string]map[string]string) func(context.Context, string) (string, error) {
	t.Helper()
	root := t.TempDir()
	dirs := map[string]string{}
	for digest, files := range trees {
		d := filepath.Join(root, strings.TrimPrefix(digest, "sha256:"))
		for name, content := range files {
			p := filepath.Join(d, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs[digest] = d
	}
	return func(_ context.Context, digest string) (string, error) {
		d, ok := dirs[digest]
		if !ok {
			return "", fmt.Errorf("no artifact %s", digest)
		}
		return d, nil
	}
}

const (
	oldDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	newDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000002"
)

func cm(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: apps\ndata:\n  value: %q\n  env: ${cluster_label_env}\n", name, value)
}

func release(name, project, path string) v1alpha1.Release {
	return v1alpha1.Release{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ReleaseSpec{
		Source: "apps", Path: path, Project: project, Targets: []v1alpha1.Target{{}}}}
}

// fixture: n clusters (env prod and dir web2 for even, env dev and dir web for odd) that all run release web (and, when
// with, release api) at oldDigest; the candidate moves everything to newDigest.
func fixture(t testing.TB, n int, candidate *v1alpha1.Fleet) Input {
	t.Helper()
	old := &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}},
		Releases: []v1alpha1.Release{release("web", "", "web"), release("api", "", "api")}}
	var clusters []schedule.Cluster
	for i := range n {
		clusters = append(clusters, schedule.Cluster{Name: fmt.Sprintf("c-%04d", i), Labels: map[string]string{"env": []string{"prod", "dev"}[i%2], "dir": []string{"web2", "web"}[i%2]}})
	}
	current := schedule.Schedule(old, clusters, map[string]schedule.Artifact{"apps": {Source: "apps", Revision: "main@sha1:1", Digest: oldDigest}}, nil, "r1")
	docs := map[string]desired.Document{}
	for _, c := range clusters {
		docs[c.Name] = current.Document(c.Name)
	}
	return Input{
		Candidate: candidate, CandidateRevision: "plan", Clusters: clusters, Current: docs,
		Artifacts: map[string]schedule.Artifact{"apps": {Source: "apps", Revision: "main@sha1:2", Digest: newDigest}},
		Dir: artifactDirs(t, map[string]map[string]string{
			oldDigest: {"web/cm.yaml": cm("web", "1"), "api/cm.yaml": cm("api", "1")},
			newDigest: {"web/cm.yaml": cm("web", "2"), "api/cm.yaml": cm("api", "1"), "web2/cm.yaml": cm("web", "1"),
				"broken/cm.yaml": cm("web", "${nope}")},
		}),
		Now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
	}
}

func summary(p hubclient.Plan) []string {
	var out []string
	for _, g := range p.Groups {
		s := fmt.Sprintf("%s %s x%d", g.Release, g.Change, g.ClusterCount)
		for _, o := range g.Objects {
			s += " " + o.Action + ":" + o.Kind + "/" + o.Name
		}
		if g.Error != "" {
			s += " error"
		}
		if g.Waiting != "" {
			s += " waits"
		}
		out = append(out, s)
	}
	return out
}

func TestCompute(t *testing.T) {
	t.Parallel()
	fleet := func(rels ...v1alpha1.Release) *v1alpha1.Fleet {
		return &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}}, Releases: rels}
	}
	onlyProd := release("web", "", "web")
	onlyProd.Spec.Targets = []v1alpha1.Target{{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}
	tests := []struct {
		name      string
		candidate *v1alpha1.Fleet
		edit      func(*Input)
		want      []string
		errors    bool
		truncated string
	}{
		{name: "a manifest change on 1000 clusters collapses to one group per rendered diff",
			candidate: fleet(release("web", "", "web"), release("api", "", "api")),
			want:      []string{"web changed x500 changed:ConfigMap/web", "web changed x500 changed:ConfigMap/web"}},
		{name: "a path that renders the same objects changes only the assignment",
			candidate: fleet(release("web", "", "{{ .Cluster.Labels.dir }}"), release("api", "", "api")),
			want:      []string{"web changed x500", "web changed x500 changed:ConfigMap/web"}},
		{name: "targets narrowed: the dev clusters lose web, prod gets the new manifest",
			candidate: fleet(onlyProd, release("api", "", "api")),
			want:      []string{"web changed x500 changed:ConfigMap/web", "web lost x500 removed:ConfigMap/web"}},
		{name: "a new release is gained",
			candidate: fleet(release("web", "", "web2"), release("api", "", "api"), release("extra", "", "api")),
			want:      []string{"extra gained x500 added:ConfigMap/api", "extra gained x500 added:ConfigMap/api", "web changed x1000"}},
		{name: "an undefined variable is a render error and fails the plan",
			candidate: fleet(release("web", "", "broken"), release("api", "", "api")),
			want:      []string{"web changed x1000 error"}, errors: true},
		{name: "a deny window holds back the change",
			candidate: func() *v1alpha1.Fleet {
				f := fleet(release("web", "", "web2"), release("api", "", "api"))
				f.Windows = []v1alpha1.Window{{Metadata: v1alpha1.ObjectMeta{Name: "always"}, Spec: v1alpha1.WindowSpec{
					Type: v1alpha1.WindowDeny, Schedule: "* * * * *", Duration: v1alpha1.Duration{Duration: time.Hour},
					ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}}
				f.Releases[0].Spec.Variables = map[string]string{"x": "1"}
				return f
			}(),
			want: []string{"web changed x500", "web changed x500 waits"}},
		{name: "the viewer of one project sees its releases only",
			candidate: fleet(release("web", "team-a", "web"), release("api", "team-b", "broken")),
			edit: func(in *Input) {
				for _, name := range []string{"team-a", "team-b"} {
					in.Candidate.Projects = append(in.Candidate.Projects, v1alpha1.Project{Metadata: v1alpha1.ObjectMeta{Name: name},
						Spec: v1alpha1.ProjectSpec{Sources: []string{"apps"}}})
				}
				// Visibility follows the projects in force, so the fleet in force has them too.
				in.InForce = fleet(release("web", "team-a", "web"), release("api", "team-b", "api"))
				in.InForce.Projects = in.Candidate.Projects
				in.Visible = func(_, project string) bool { return project == "team-b" }
			},
			want: []string{"api changed x1000 error"}, errors: true},
		{name: "renders over the limit are left out and said so",
			candidate: fleet(release("web", "", "web"), release("api", "", "api")),
			edit:      func(in *Input) { in.Limits = DefaultLimits(); in.Limits.Renders = 3 },
			// c-0000 (prod) renders api twice and web's in force; web's candidate is over, and
			// so is everything on the dev clusters.
			want:   []string{"api changed x500 error", "web changed x500 error", "web changed x500 error"},
			errors: true, truncated: "renders over the limit of 3 were left out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := fixture(t, 1000, tt.candidate)
			if tt.edit != nil {
				tt.edit(&in)
			}
			p, err := Compute(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if p.Errors != tt.errors {
				t.Errorf("errors %v, want %v: %+v", p.Errors, tt.errors, p.Problems)
			}
			if tt.truncated != "" && !strings.Contains(strings.Join(p.Truncated, "\n"), tt.truncated) {
				t.Errorf("truncated %q, want %q", p.Truncated, tt.truncated)
			}
			for _, g := range p.Groups {
				if len(g.Clusters) > DefaultLimits().ClustersListed {
					t.Errorf("group %s lists %d clusters", g.Release, len(g.Clusters))
				}
			}
		})
	}
}

// TestComputeUnchanged: the configuration in force, planned against itself, changes nothing.
func TestComputeUnchanged(t *testing.T) {
	t.Parallel()
	in := fixture(t, 10, &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}},
		Releases: []v1alpha1.Release{release("web", "", "web"), release("api", "", "api")}})
	in.Artifacts["apps"] = schedule.Artifact{Source: "apps", Revision: "main@sha1:1", Digest: oldDigest}
	p, err := Compute(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Changes || p.Errors || len(p.Groups) != 0 || p.Summary.Clusters != 10 {
		t.Errorf("plan of the configuration in force: %+v", p)
	}
}

// BenchmarkCompute1000 plans a manifest change of two releases on 1,000 clusters.
func BenchmarkCompute1000(b *testing.B) {
	in := fixture(b, 1000, &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "apps"}}},
		Releases: []v1alpha1.Release{release("web", "", "web"), release("api", "", "api")}})
	for b.Loop() {
		p, err := Compute(b.Context(), in)
		if err != nil || len(p.Groups) != 2 {
			b.Fatalf("%v: %d groups", err, len(p.Groups))
		}
	}
}
