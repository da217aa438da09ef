package render_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/bytesize"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/procstat"
	"github.com/flotilla/flotilla/internal/render"
)

// writeTree writes files (slash paths) under a new directory and returns it.
func sandboxTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// doublingChart is a 300-byte chart whose one template doubles a string 40 times: a TiB.
func doublingChart() map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"templates/cm.yaml": `{{- $s := "x" }}{{- range until 40 }}{{- $s = print $s $s }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb}
data: {s: {{ $s | quote }}}
`,
	}
}

// fanOut is a kustomization of depth levels, each two copies (two overlays with different
// namePrefix) of the level below: 2^depth copies of one ConfigMap.
func fanOut(depth int) map[string]string {
	files := map[string]string{
		"l0/kustomization.yaml": "resources: [cm.yaml]\n",
		"l0/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: " + strings.Repeat("v", 512) + "}\n",
	}
	for i := 1; i <= depth; i++ {
		for _, side := range []string{"a", "b"} {
			files[fmt.Sprintf("l%d/%s/kustomization.yaml", i, side)] = fmt.Sprintf("namePrefix: %s-\nresources: [../../l%d]\n", side, i-1)
		}
		files[fmt.Sprintf("l%d/kustomization.yaml", i)] = "resources: [a, b]\n"
	}
	return files
}

// aliasBomb is a billion-laughs document: nine levels of ten aliases each.
func aliasBomb() map[string]string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a0: &a0 lol\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return map[string]string{"bomb.yaml": b.String()}
}

func newSandbox(t testing.TB, concurrent int) *render.Sandbox {
	t.Helper()
	s, err := render.NewSandbox(render.SandboxOptions{Concurrent: concurrent})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func peak(t testing.TB) int64 {
	t.Helper()
	n, err := procstat.Bytes(os.Getpid(), procstat.Peak)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSandboxBombs: each bomb fails its own release with the bound it exceeded named, and
// the test process (the agent, in production) never holds the bomb's memory.
//
// Serial, subtests too: it reads this process's peak resident size, which other tests'
// renders would raise.
func TestSandboxBombs(t *testing.T) {
	budget := render.Budget{MemoryBytes: 128 << 20, CPUTime: 20 * time.Second, WallTime: 20 * time.Second}
	for _, tc := range []struct {
		name   string
		files  map[string]string
		path   string
		budget render.Budget
		want   string
	}{
		{"doubling chart", doublingChart(), ".", budget, "render of release a-web stopped: memory budget 128 MiB exceeded (.)"},
		// The fan-out stays small in memory and spins: its CPU time stops it.
		{"kustomize fan-out", fanOut(12), "l12", render.Budget{MemoryBytes: 128 << 20, CPUTime: 3 * time.Second, WallTime: time.Minute}, "render of release a-web stopped: cpu budget 3s exceeded (l12/kustomization.yaml)"},
		// The renderer's own bound on alias expansion (maxAliasExpansion in convert.go) refuses it, in the child as in Render.
		{"alias bomb", aliasBomb(), ".", budget, "render bomb.yaml:6: yaml: too many alias expansions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := sandboxTree(t, tc.files)
			s := newSandbox(t, 1)
			before := peak(t)
			_, err := s.Render(t.Context(), render.Options{Root: root, Path: tc.path, Budget: tc.budget, Project: "team", Release: "a-web"})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("render: %v, want %s", err, tc.want)
			}
			if strings.Contains(tc.want, "budget") && !errors.Is(err, render.ErrBudget) {
				t.Errorf("errors.Is(%v, ErrBudget) = false", err)
			}
			// In process, the doubling chart alone takes over a GiB and the fan-out several;
			// 256 MiB leaves room for the race detector's own memory while a child runs.
			if grown := peak(t) - before; grown > 256<<20 {
				t.Errorf("the test process's peak resident size grew by %s", bytesize.Format(grown))
			}
		})
	}
}

// TestSandboxBudgets: the output bounds and the time bounds are named with their values.
func TestSandboxBudgets(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\n", i)
	}
	many["cms.yaml"] = b.String()
	spin := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: spin\nversion: 0.1.0\n",
		"templates/cm.yaml": `{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}`,
	}
	for _, tc := range []struct {
		name   string
		files  map[string]string
		budget render.Budget
		want   string
	}{
		{"objects", many, render.Budget{Objects: 10}, "render of release a-web stopped: objects budget 10 exceeded (cms.yaml)"},
		{"output", many, render.Budget{OutputBytes: 1000}, "render of release a-web stopped: output budget 1000 bytes exceeded (cms.yaml)"},
		{"wall", spin, render.Budget{WallTime: 3 * time.Second}, "render of release a-web stopped: wall budget 3s exceeded (.)"},
		{"cpu", spin, render.Budget{CPUTime: 300 * time.Millisecond}, "render of release a-web stopped: cpu budget 300ms exceeded (.)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := sandboxTree(t, tc.files)
			_, err := newSandbox(t, 1).Render(t.Context(), render.Options{Root: root, Budget: tc.budget, Project: "team", Release: "a-web"})
			if err == nil || err.Error() != tc.want || !errors.Is(err, render.ErrBudget) {
				t.Fatalf("render: %v, want %s", err, tc.want)
			}
		})
	}
}

// spinChart is a chart whose one template loops without allocating: it holds its render
// (and its slot) until its CPU or wall budget, or its caller's context, stops it.
func spinChart() map[string]string {
	return map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: spin\nversion: 0.1.0\n",
		"templates/cm.yaml": `{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}`,
	}
}

// waitForChild waits until this process has a child (a render process) running.
func waitForChild(t *testing.T) {
	t.Helper()
	eventually.Within(t, 30*time.Second, eventually.True("a render process started", func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
		for _, f := range tasks {
			if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "" {
				return true
			}
		}
		return false
	}))
}

// TestSandboxPlatformAlongsideBomb: while a team's render holds a slot (a chart that spins
// until it is stopped) and its bomb holds another until it is killed, the platform's releases
// render, a plain directory and a kustomization alike (the kustomization on a slot of its
// own): no lock of the process, of kustomize or of the slots, lets one release hold the
// others. The platform's renders must end while the team's spinner still runs.
//
// Serial: waitForChild would take another test's render process for the spinner's.
func TestSandboxPlatformAlongsideBomb(t *testing.T) {
	s := newSandbox(t, 2)
	spinCtx, stopSpin := context.WithCancel(context.Background())
	defer stopSpin()
	spun := make(chan error, 1)
	go func() {
		_, err := s.Render(spinCtx, render.Options{Root: sandboxTree(t, spinChart()), Project: "team", Release: "spin",
			Budget: render.Budget{CPUTime: 30 * time.Second, WallTime: 30 * time.Second}})
		spun <- err
	}()
	waitForChild(t)

	bomb := sandboxTree(t, doublingChart())
	done := make(chan error, 1)
	go func() {
		_, err := s.Render(context.Background(), render.Options{Root: bomb, Project: "team", Release: "bomb"})
		done <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	vars := map[string]string{"cluster_name": "eu-1", "region": "eu", "replicas": "2"}
	for _, path := range []string{"plain", "overlay/apps/prod"} {
		objs, err := s.Render(ctx, render.Options{Root: "testdata", Path: path, Vars: vars, Project: "platform", Release: "base"})
		if err != nil || len(objs) == 0 {
			t.Fatalf("platform render of %s alongside a team's spinning render and bomb: %d objects, %v", path, len(objs), err)
		}
	}
	select {
	case err := <-spun:
		t.Fatalf("the team's spinning render ended (%v) before the platform's renders did: they waited behind it", err)
	default:
	}
	if err := <-done; !errors.Is(err, render.ErrBudget) {
		t.Fatalf("bomb: %v, want a budget error", err)
	}
	stopSpin()
	if err := <-spun; err == nil {
		t.Fatal("the spinning render ended without an error")
	}
}

// TestSandboxMatchesRender: the child renders what Render does, errors keep their place and
// cause, and decryption works across the pipe (the identity goes on stdin).
func TestSandboxMatchesRender(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, 2)
	vars := map[string]string{"cluster_name": "eu-1", "region": "eu", "replicas": "2"}
	for _, path := range []string{"plain", "overlay/apps/prod", "helm/charts"} {
		t.Run(path, func(t *testing.T) {
			want, wantErr := render.Render(t.Context(), render.Options{Root: "testdata", Path: path, Vars: vars})
			got, err := s.Render(t.Context(), render.Options{Root: "testdata", Path: path, Vars: vars})
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("sandbox error %v, Render's %v", err, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("sandbox rendered %d objects, Render %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i].Object, want[i].Object) {
					t.Errorf("object %d: sandbox %v, Render %v", i, got[i].Object, want[i].Object)
				}
			}
		})
	}
	_, err := s.Render(t.Context(), render.Options{Root: "testdata", Path: "missingvar"})
	if !errors.Is(err, render.ErrUndefinedVariable) {
		t.Errorf("missing variable through the sandbox: %v, want ErrUndefinedVariable", err)
	}

	k := sopsKey(t)
	doc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  annotations: {team: a}\nstringData:\n  password: s3cret\n"
	root := sandboxTree(t, map[string]string{"secret.yaml": encryptFor(t, doc, k)})
	objs, err := s.Render(t.Context(), render.Options{Root: root, Decrypt: decryptorFor(t, "eu-1", k)})
	if err != nil || len(objs) != 1 {
		t.Fatalf("decrypting render: %d objects, %v", len(objs), err)
	}
	if got, _, _ := unstructuredString(objs[0].Object, "stringData", "password"); got != "s3cret" {
		t.Errorf("decrypted password %q", got)
	}
	if got := objs[0].GetAnnotations()["team"]; got != "a" {
		t.Errorf("annotation team = %q across the pipe", got)
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var v any = obj
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false, nil
		}
		v = m[f]
	}
	s, ok := v.(string)
	return s, ok, nil
}

// TestRenderAliasBomb: the in-process Render refuses a billion-laughs document too.
func TestRenderAliasBomb(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t, aliasBomb())
	_, err := render.Render(t.Context(), render.Options{Root: root})
	if want := "render bomb.yaml:6: yaml: too many alias expansions"; err == nil || err.Error() != want {
		t.Fatalf("render: %v, want %s", err, want)
	}
}

// TestSandboxSubstitutionBomb: a small plain directory (rendered in the caller's process)
// whose one value refers a thousand times to a variable of 1 MiB would substitute to a GiB;
// substitution stops at the output budget instead, naming it, and the process never holds
// the GiB.
//
// Serial: it reads this process's peak resident size, which other tests' renders would raise.
func TestSandboxSubstitutionBomb(t *testing.T) {
	refs := strings.Repeat("${big}", 1024)
	root := sandboxTree(t, map[string]string{"cms.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata: {a: \"" + refs + "\"}\n"})
	s := newSandbox(t, 1)
	before := peak(t)
	_, err := s.Render(t.Context(), render.Options{Root: root, Vars: map[string]string{"big": strings.Repeat("x", 1<<20)},
		Budget: render.Budget{OutputBytes: 8 << 20}, Project: "team", Release: "a-web"})
	if want := "render of release a-web stopped: output budget 8 MiB exceeded (cms.yaml)"; err == nil || err.Error() != want {
		t.Fatalf("render: %v, want %s", err, want)
	}
	if !errors.Is(err, render.ErrBudget) {
		t.Errorf("errors.Is(%v, ErrBudget) = false", err)
	}
	// Unbounded, the value alone is a GiB; 256 MiB leaves room for the race detector.
	if grown := peak(t) - before; grown > 256<<20 {
		t.Errorf("the test process's peak resident size grew by %s", bytesize.Format(grown))
	}
}
