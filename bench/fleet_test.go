package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/procstat"
)

// BenchmarkFleetRevision runs the hub as its own process (the real binary) with three real
// clusters whose agents reach it through a byte-counting TCP proxy, and reports:
//
//   - commit-to-converged-s: from a commit in the fleet repository to all three clusters
//     Ready at it (the source is polled every 2s, so up to 2s of it is the poll);
//
//   - revision-bytes/cluster: bytes the hub sent to each agent for that new revision
//     (desired-state message, artifact download, acks, TLS framing: everything on the wire);
//
//   - idle-bytes/agent/min, both directions: an idle minute (heartbeats, periodic drift
//     checks and their reports);
//
//   - hub-rss-MiB: the hub process's resident memory with three agents connected.
//
//     go test -run '^$' -bench FleetRevision -benchtime 1x ./bench
func BenchmarkFleetRevision(b *testing.B) {
	flotilla := buildFlotilla(b)
	for b.Loop() {
		runFleetRevision(b, flotilla)
	}
}

func runFleetRevision(b *testing.B, flotilla string) {
	ctx := b.Context()
	dir := b.TempDir()
	repoDir := filepath.Join(dir, "fleet")
	repo := newFleetRepo(b, repoDir)

	hubDir := filepath.Join(dir, "hub")
	hubCmd := exec.CommandContext(ctx, flotilla, "hub", "--data-dir", hubDir, "--fleet", "file://"+repoDir, "--allow-file-sources", repoDir,
		"--fleet-path", "fleet", "--agent-addr", "127.0.0.1:0", "--api-addr", "127.0.0.1:0", "--fleet-interval", "1s", "--log-level", "warn")
	stderr, err := hubCmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := hubCmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hubCmd.Process.Kill(); _ = hubCmd.Wait() }() // killed: its exit error says so and nothing more
	agentURL, apiURL := readHubAddresses(b, stderr)
	proxy, err := faultproxy.Start(strings.TrimPrefix(agentURL, "https://"))
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	token, err := os.ReadFile(filepath.Join(hubDir, "admin.token"))
	if err != nil {
		b.Fatal(err)
	}
	client, err := hubclient.NewClient(hubclient.Config{Hub: apiURL, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(hubDir, "ca.crt")})
	if err != nil {
		b.Fatal(err)
	}

	clusters, err := localcluster.StartAll(ctx, []localcluster.Options{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := localcluster.StopAll(clusters); err != nil {
			b.Error(err)
		}
	}()
	agentCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	for _, c := range clusters {
		j, err := client.AddCluster(ctx, c.Name(), map[string]string{"env": "prod"})
		if err != nil {
			b.Fatal(err)
		}
		a, err := agent.New(ctx, agent.Options{HubURL: "https://" + proxy.Addr(), JoinToken: j.JoinToken, RESTConfig: c.RESTConfig(), StateDir: filepath.Join(dir, "agent-"+c.Name())})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			if err := a.Run(agentCtx); err != nil {
				b.Errorf("agent: %v", err)
			}
			a.Close()
		}()
	}
	waitAllReady(b, client, "")

	downBefore, _ := proxyDown(proxy)
	start := time.Now()
	commit := repo.commit(b, map[string]string{"apps/web/config.yaml": configYAML("v2")})
	waitAllReady(b, client, commit)
	converge := time.Since(start)
	// Real time: the hub's answers to the last reports are still on the wire when the status
	// says Ready, and the proxy has no signal for a response's end: let them cross.
	time.Sleep(500 * time.Millisecond)
	downAfter, _ := proxyDown(proxy)

	idleUp0, idleDown0 := proxy.Bytes()
	// Real time: an idle minute's traffic is what is measured.
	time.Sleep(time.Minute)
	idleUp1, idleDown1 := proxy.Bytes()
	rss, err := procstat.Bytes(hubCmd.Process.Pid, procstat.Resident)
	if err != nil {
		b.Fatal(err)
	}

	b.ReportMetric(converge.Seconds(), "commit-to-converged-s")
	b.ReportMetric(float64(downAfter-downBefore)/3, "revision-bytes/cluster")
	b.ReportMetric(float64(idleDown1-idleDown0)/3, "idle-hub-to-agent-bytes/agent/min")
	b.ReportMetric(float64(idleUp1-idleUp0)/3, "idle-agent-to-hub-bytes/agent/min")
	b.ReportMetric(float64(rss)/(1<<20), "hub-rss-MiB")
}

func proxyDown(p *faultproxy.Proxy) (int64, int64) {
	up, down := p.Bytes()
	return down, up
}

// readHubAddresses reads the endpoints the hub prints on start.
func readHubAddresses(b *testing.B, r interface{ Read([]byte) (int, error) }) (agentURL, apiURL string) {
	b.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Hub agent endpoint: "); ok {
			agentURL = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Hub API:"); ok {
			apiURL = strings.TrimSpace(v)
		}
		if agentURL != "" && apiURL != "" {
			go func() {
				for sc.Scan() {
				}
			}()
			return agentURL, apiURL
		}
	}
	b.Fatalf("hub exited before printing its addresses: %v", sc.Err())
	return "", ""
}

// waitAllReady waits until the three assignments are Ready at their desired revision, which
// names commit.
func waitAllReady(b *testing.B, c *hubclient.Client, commit string) {
	b.Helper()
	eventually.Within(b, 2*time.Minute, func() error {
		st, err := c.Status(b.Context())
		if err != nil {
			return fmt.Errorf("fleet did not converge: %w", err)
		}
		if len(st.Assignments) != 3 {
			return fmt.Errorf("fleet did not converge: %d assignments, want 3", len(st.Assignments))
		}
		for _, a := range st.Assignments {
			if a.Phase != "Ready" || a.AppliedRevision != a.DesiredRevision || !strings.Contains(a.DesiredRevision, commit) {
				return fmt.Errorf("fleet did not converge: %s on %s is %s at %s, desired %s (want Ready at it, naming %q)", a.Release, a.Cluster, a.Phase, a.AppliedRevision, a.DesiredRevision, commit)
			}
		}
		return nil
	})
}

type fleetRepo struct {
	dir string
	r   *git.Repository
}

func configYAML(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {version: " + version + "}\n"
}

func newFleetRepo(b *testing.B, dir string) *fleetRepo {
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		b.Fatal(err)
	}
	fr := &fleetRepo{dir: dir, r: r}
	fr.commit(b, map[string]string{
		"fleet/fleet.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {matchLabels: {env: prod}}}]
  namespace: web
  createNamespace: true
  prune: true
  interval: 1m
`, dir),
		"apps/web/config.yaml": configYAML("v1"),
		"apps/web/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`,
	})
	return fr
}

func (fr *fleetRepo) commit(b *testing.B, files map[string]string) string {
	wt, err := fr.r.Worktree()
	if err != nil {
		b.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(fr.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			b.Fatal(err)
		}
	}
	h, err := wt.Commit("change", &git.CommitOptions{Author: &object.Signature{Name: "bench", Email: "bench@example.com", When: time.Now()}})
	if err != nil {
		b.Fatal(err)
	}
	return h.String()
}
