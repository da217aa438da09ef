package e2e

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Issue 24, section 1: a team's render bombs fail alone, each with its bound named, while a
// platform release on the same cluster keeps being delivered, and neither the agent nor the
// hub (for a plan) grows past a bound. The agent and the hub run as processes (procFleet),
// so their peak resident memory is theirs alone: VmHWM of /proc/PID/status.
//
// The bounds are those of race-built binaries (the suite builds flotilla with -race, whose
// shadow memory roughly doubles a Go process's resident size): an idle race-built agent or
// hub holds well under 100 MiB, and a render runs in a child process whose memory is not the
// agent's. rssBound is what the agent and the hub may reach while the bombs render; a
// render in the process itself reaches it within a second (the chart bomb allocates
// 1.39 GiB in 0.65 s at 30 doublings, doubling per step), and the watchdog then kills the
// process at rssKill so that the machine survives the test on code that renders in-process.
const (
	rssBound = 300 << 20
	rssKill  = 1 << 30
)

// Bombs a team commits to its own repository.
var (
	// chartBomb doubles a string 40 times: a TiB if nothing stops it.
	chartBomb = map[string]string{
		"chart/Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": `{{- $s := "ab" }}{{- range until 40 }}{{- $s = print $s $s }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb}
data: {s: {{ $s | quote }}}
`,
	}
	// aliasBomb is a billion laughs: 9 levels of 9 aliases of the level below.
	aliasBomb = func() string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata:\n  l0: &l0 \"lol\"\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
			for j := range 9 {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "*l%d", i-1)
			}
			b.WriteString("]\n")
		}
		return b.String()
	}()
)

// kustomizeFanOut is a kustomization of levels levels, each two overlays (namePrefix a- and
// b-) of the level below, over a base of three ConfigMaps: 3 x 2^levels objects.
func kustomizeFanOut(dir string, levels int) map[string]string {
	files := map[string]string{
		dir + "/l0/kustomization.yaml": "resources: [cm.yaml]\n",
		dir + "/l0/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\n",
		dir + "/kustomization.yaml": fmt.Sprintf("resources: [l%d]\n", levels),
	}
	for i := 1; i <= levels; i++ {
		files[fmt.Sprintf("%s/l%d/kustomization.yaml", dir, i)] = "resources: [a, b]\n"
		for _, side := range []string{"a", "b"} {
			files[fmt.Sprintf("%s/l%d/%s/kustomization.yaml", dir, i, side)] =
				fmt.Sprintf("resources: [../../l%d]\nnamePrefix: %s-\n", i-1, side)
		}
	}
	return files
}

// memWatch follows a process's resident memory: its peak (VmHWM), and a kill at rssKill.
type memWatch struct {
	pid    int
	mu     sync.Mutex
	peak   int64
	killed bool
	stop   chan struct{}
	done   chan struct{}
}

func watchMemory(t *testing.T, pid int) *memWatch {
	w := &memWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, hwm, err := procMemory(pid)
			if err != nil {
				return // the process is gone
			}
			w.mu.Lock()
			w.peak = max(w.peak, hwm)
			if rss > rssKill && !w.killed {
				w.killed = true
				_ = syscall.Kill(pid, syscall.SIGKILL) // fails only if it has already exited
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(w.stop); <-w.done })
	return w
}

func (w *memWatch) read() (peak int64, killed bool) {
	if _, hwm, err := procMemory(w.pid); err == nil {
		w.mu.Lock()
		w.peak = max(w.peak, hwm)
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.killed
}

// procMemory reads VmRSS and VmHWM (bytes) of a process.
func procMemory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %v", pid, k, err)
		}
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	if rss == 0 && hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS (a zombie)", pid)
	}
	return rss, hwm, s.Err()
}

// renderChildren counts the render child processes (flotilla __render) of a process.
func renderChildren(pid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing paren.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); err == nil && strings.Contains(string(cmdline), "__render") {
			n++
		}
	}
	return n
}

func alive(p *proc) bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// budgetError says whether a render error names an exceeded bound of the render budget.
func budgetError(msg string) bool {
	return strings.Contains(msg, "budget") && strings.Contains(msg, "exceeded")
}

// TestRenderBombs does not run in parallel with the others: it measures the agent's and the
// hub's peak memory, and that the platform's commit lands within 20 s while bombs render,
// which other fleets sharing the two cores would make a measure of the machine instead.
func TestRenderBombs(t *testing.T) {
	fleetDir, teamDir := t.TempDir(), t.TempDir()
	fleetYAML := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: team}
spec:
  git: {url: "file://%s", branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: [team]
  namespaces: [team-a]
  serviceAccount: {namespace: team-a, name: deployer}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: platform-base}
spec: {source: platform, path: platform, targets: [{selector: {}}], prune: true, interval: 2s}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: a-chart}
spec: {project: team-a, source: team, path: chart, namespace: team-a, targets: [{selector: {}}], helm: {releaseName: bomb}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: a-kustomize}
spec: {project: team-a, source: team, path: fanout, namespace: team-a, targets: [{selector: {}}]}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: a-alias}
spec: {project: team-a, source: team, path: alias, namespace: team-a, targets: [{selector: {}}]}
`, fleetDir, teamDir)
	platformYAML := func(rev string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: team-a}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: ServiceAccount, name: deployer, namespace: team-a}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: platform, namespace: default}
data: {rev: ` + rev + "}\n"
	}
	fleetRepo := newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": fleetYAML, "platform/base.yaml": platformYAML("v1")})
	teamFiles := kustomizeFanOut("fanout", 12)
	for k, v := range chartBomb {
		teamFiles[k] = v
	}
	teamFiles["alias/cm.yaml"] = aliasBomb
	teamRepo := newRepo(t, teamDir, teamFiles)

	f := newProcFleet(t, "file://"+fleetDir, map[string]map[string]string{"edge": {"env": "prod"}})
	agentProc, hubProc := f.agents["edge"], f.hub
	agentMem, hubMem := watchMemory(t, agentProc.cmd.Process.Pid), watchMemory(t, hubProc.cmd.Process.Pid)
	checkAlive := func(when string) {
		t.Helper()
		if _, killed := agentMem.read(); killed || !alive(agentProc) {
			t.Fatalf("%s: the agent died (killed by the test at %d MiB resident: %v)\nagent log:\n%s", when, rssKill>>20, killed, tail(agentProc.log))
		}
		if _, killed := hubMem.read(); killed || !alive(hubProc) {
			t.Fatalf("%s: the hub died (killed by the test at %d MiB resident: %v)\nhub log:\n%s", when, rssKill>>20, killed, tail(hubProc.log))
		}
	}

	bombs := []string{"a-chart", "a-kustomize", "a-alias"}
	t.Run("agent", func(t *testing.T) {
		var last hubclient.StatusView
		t.Cleanup(func() {
			if t.Failed() {
				for _, a := range last.Assignments {
					t.Logf("%s: %s: %s", a.Release, a.Phase, a.Error)
				}
			}
		})
		eventually.Within(t, 3*time.Minute, eventually.True("every bomb failed with its bound named, the platform release Ready", func() bool {
			checkAlive("while the bombs render")
			st, err := f.client.Status(t.Context())
			if err != nil {
				return false
			}
			last = st
			byRelease := map[string]hubclient.AssignmentView{}
			for _, a := range st.Assignments {
				byRelease[a.Release] = a
			}
			if byRelease["platform-base"].Phase != "Ready" {
				return false
			}
			for _, r := range bombs {
				a := byRelease[r]
				// The YAML decoder refuses an alias bomb itself, before any budget is reached.
				named := budgetError(a.Error) || r == "a-alias" && strings.Contains(a.Error, "too many alias expansions")
				if a.Phase != "Failed" || !named {
					return false
				}
			}
			return true
		}))
		for _, a := range last.Assignments {
			t.Logf("%s: %s: %s", a.Release, a.Phase, a.Error)
		}
		bombsPeak, _ := agentMem.read()
		t.Logf("agent peak resident memory (VmHWM) once every bomb failed: %d MiB (bound %d MiB)", bombsPeak>>20, rssBound>>20)

		// The platform release takes a new commit while a bomb renders. By now the bombs
		// wait out their retry backoff most of the time, so a sync makes the kustomize bomb
		// render again, for its whole 30 s wall budget, just before the commit: a loop that
		// reconciles one release at a time for the whole cluster applies the commit only after
		// that render, past the 20 s allowed here (the poll and the release's interval are 2 s).
		if _, err := f.client.Sync(t.Context(), "a-kustomize", hubclient.SyncRequest{}); err != nil {
			t.Fatal(err)
		}
		eventually.Within(t, 30*time.Second, eventually.True("the agent renders the kustomize bomb again", func() bool {
			return renderChildren(agentProc.cmd.Process.Pid) > 0
		}))
		fleetRepo.commit("platform v2", map[string]string{"platform/base.yaml": platformYAML("v2")})
		committed := time.Now()
		eventually.Within(t, 20*time.Second, eventually.True("the platform release's new commit applied", func() bool {
			checkAlive("while the platform release moves on")
			v, ok := configMapData(t, f.clusters["edge"], "default", "platform", "rev")
			return ok && v == "v2"
		}))
		t.Logf("platform release applied its new commit %s after the commit", time.Since(committed).Round(100*time.Millisecond))
		checkAlive("after the bombs")
		peak, _ := agentMem.read()
		t.Logf("agent peak resident memory (VmHWM) during the bombs: %d MiB (bound %d MiB)", peak>>20, rssBound>>20)
		if peak > rssBound {
			t.Errorf("agent peak resident memory %d MiB, over its bound of %d MiB", peak>>20, rssBound>>20)
		}
	})

	t.Run("plan", func(t *testing.T) {
		ctx := t.Context()
		// The team's branch with the chart bomb: the plan reads the team's source there.
		head, err := teamRepo.r.Head()
		if err != nil {
			t.Fatal(err)
		}
		if err := teamRepo.r.Storer.SetReference(plumbing.NewHashReference("refs/heads/bomb", head.Hash())); err != nil {
			t.Fatal(err)
		}
		tok, err := f.client.CreateUserToken(ctx, hubclient.CreateUserTokenRequest{Name: "a-viewer", Role: "viewer", Projects: []string{"team-a"}})
		if err != nil {
			t.Fatal(err)
		}
		viewer, err := hubclient.NewClient(hubclient.Config{Hub: "https://" + f.apiAddr, Token: tok.Token, CAFile: f.dir + "/hub/ca.crt"})
		if err != nil {
			t.Fatal(err)
		}
		hubBefore, _ := hubMem.read()
		start := time.Now()
		plan, err := viewer.Plan(ctx, hubclient.PlanRequest{Ref: "main", Sources: map[string]string{"team": "bomb"}})
		checkAlive("after the bomb plan")
		if err != nil {
			t.Fatalf("plan of the bomb branch by a viewer of team-a: %v\nhub log:\n%s", err, tail(hubProc.log))
		}
		t.Logf("bomb plan answered in %s", time.Since(start).Round(time.Millisecond))
		var found bool
		for _, p := range plan.Problems {
			t.Logf("plan problem: %s %s/%s: %s", p.Kind, p.Release, p.Cluster, p.Message)
			if p.Kind == hubclient.PlanRender && p.Release == "a-chart" && budgetError(p.Message) {
				found = true
			}
		}
		for _, g := range plan.Groups {
			if g.Release == "a-chart" && g.Error != "" {
				t.Logf("plan group %s %s: %s", g.Release, g.Change, g.Error)
				found = found || budgetError(g.Error)
			}
		}
		if !found {
			t.Errorf("plan of the chart bomb: no render problem of a-chart naming its bound; problems %+v", plan.Problems)
		}
		peak, _ := hubMem.read()
		t.Logf("hub peak resident memory (VmHWM): %d MiB before the bomb plan, %d MiB after (bound %d MiB)", hubBefore>>20, peak>>20, rssBound>>20)
		if peak > rssBound {
			t.Errorf("hub peak resident memory %d MiB, over its bound of %d MiB", peak>>20, rssBound>>20)
		}
		// The hub keeps serving: a second request succeeds.
		if _, err := viewer.Status(ctx); err != nil {
			t.Errorf("status after the bomb plan: %v", err)
		}
		if _, err := viewer.Plan(ctx, hubclient.PlanRequest{Ref: "main"}); err != nil {
			t.Errorf("a second plan after the bomb plan: %v", err)
		}
	})
}
