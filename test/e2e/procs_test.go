package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/testbin"
)

// The fault tests run the real flotilla binary: a hub process and one agent process per
// cluster, each agent reaching the hub through its own fault proxy, so that processes can be
// killed and connections cut, delayed or black-holed over real TCP.

// flotilla is the race-built binary make hands the tests (testbin: FLOTILLA_BIN).
func flotilla(t *testing.T) string {
	t.Helper()
	return testbin.Path(t, "flotilla")
}

// proc is a running flotilla process whose output goes to a log file.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startProc(t *testing.T, log string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flotilla(t), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }() // how it ended is the test's to judge, from its log
	return p
}

// kill ends the process at once, as a crash or an OOM kill would.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // fails only if it has already exited
	<-p.done
}

// stop asks the process to end and waits (SIGKILL after 20s).
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // fails only if it has already exited
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill()
	}
}

// procFleet is a hub process, clusters, and agent processes behind fault proxies.
type procFleet struct {
	t         *testing.T
	dir       string
	fleetURL  string
	agentAddr string
	apiAddr   string
	hub       *proc
	client    *hubclient.Client
	clusters  map[string]*localcluster.Cluster
	proxies   map[string]*faultproxy.Proxy
	agents    map[string]*proc
	// produced counts, per cluster, the reports of agent incarnations whose state dir is gone
	// (read before wiping); lost counts those that died unsent with the disk.
	produced   map[string]int64
	lost       map[string]int64
	firstSeq   map[string]uint64
	metrics    map[string]string // agent metrics address by cluster
	hubMetrics string
}

// freeAddr is a loopback address free now, for a process that is restarted on it. Its port
// is below the kernel's ephemeral range, so that no outgoing connection takes it while the
// process is down (a hub restarted mid-test once found its port taken that way).
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 1000 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return ""
}

func newProcFleet(t *testing.T, fleetURL string, labels map[string]map[string]string) *procFleet {
	t.Helper()
	f := &procFleet{
		t: t, dir: t.TempDir(), fleetURL: fleetURL, agentAddr: freeAddr(t), apiAddr: freeAddr(t), hubMetrics: freeAddr(t),
		clusters: map[string]*localcluster.Cluster{}, proxies: map[string]*faultproxy.Proxy{}, agents: map[string]*proc{},
		produced: map[string]int64{}, lost: map[string]int64{}, firstSeq: map[string]uint64{}, metrics: map[string]string{},
	}
	var names []string
	for name := range labels {
		names = append(names, name)
	}
	f.clusters = clustertest.StartAll(t, names...)
	f.startHub()
	t.Cleanup(func() {
		for _, a := range f.agents {
			a.stop()
		}
		if f.hub != nil {
			f.hub.stop()
		}
		for _, p := range f.proxies {
			p.Close()
		}
	})
	for name, l := range labels {
		j, err := f.client.AddCluster(t.Context(), name, l)
		if err != nil {
			t.Fatal(err)
		}
		p, err := faultproxy.Start(f.agentAddr)
		if err != nil {
			t.Fatal(err)
		}
		f.proxies[name] = p
		f.firstSeq[name] = 1
		f.startAgent(name, j.JoinToken)
	}
	return f
}

func (f *procFleet) startHub() {
	f.t.Helper()
	hubDir := filepath.Join(f.dir, "hub")
	f.hub = startProc(f.t, filepath.Join(f.dir, "hub.log"), "hub", "--data-dir", hubDir, "--fleet", f.fleetURL,
		"--fleet-branch", "main", "--fleet-path", "fleet", "--agent-addr", f.agentAddr, "--api-addr", f.apiAddr,
		"--fleet-interval", "300ms", "--log-level", "debug", "--metrics-addr", f.hubMetrics,
		"--allow-file-sources", filepath.Dir(f.dir)) // the test's repositories are its t.TempDir()s
	if err := eventually.Poll(f.t.Context(), 30*time.Second, func() error {
		token, err := os.ReadFile(filepath.Join(hubDir, "admin.token"))
		if err != nil {
			return err
		}
		if f.client, err = hubclient.NewClient(hubclient.Config{Hub: "https://" + f.apiAddr, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(hubDir, "ca.crt")}); err != nil {
			return err
		}
		_, err = f.client.Clusters(f.t.Context())
		return err
	}); err != nil {
		f.t.Fatalf("hub did not come up: %v\n%s", err, tail(f.hub.log))
	}
}

func (f *procFleet) stateDir(name string) string { return filepath.Join(f.dir, "agents", name) }

func (f *procFleet) startAgent(name, token string) {
	f.t.Helper()
	if f.metrics[name] == "" {
		f.metrics[name] = freeAddr(f.t)
	}
	args := []string{"agent", "--hub", "https://" + f.proxies[name].Addr(), "--kubeconfig", f.clusters[name].KubeconfigPath(),
		"--state-dir", f.stateDir(name), "--heartbeat-interval", "1s", "--report-interval", "200ms", "--log-level", "debug",
		"--metrics-addr", f.metrics[name]}
	if token != "" {
		args = append(args, "--join-token", token)
	}
	f.agents[name] = startProc(f.t, filepath.Join(f.dir, "agent-"+name+".log"), args...)
}

func (f *procFleet) stopAgent(name string) {
	if a := f.agents[name]; a != nil {
		a.stop()
		delete(f.agents, name)
	}
}

// checkReports stops every agent and checks, per cluster, that every report the agents
// produced was ingested exactly once (or counted as compacted): the hub's count of distinct
// reports equals the number of sequence numbers the agents used.
func (f *procFleet) checkReports() {
	f.t.Helper()
	ctx := f.t.Context()
	// Stopping an agent flushes its outbox (when the hub is reachable), so whatever is left
	// in a state dir afterwards was not delivered.
	for name := range f.clusters {
		f.stopAgent(name)
	}
	var total, ingestedTotal int64
	for name := range f.clusters {
		st, err := agent.ReadStats(f.stateDir(name))
		if err != nil {
			f.t.Fatal(err)
		}
		produced := f.produced[name] + int64(st.NextSeq-f.firstSeq[name])
		v, err := f.client.Cluster(ctx, name)
		if err != nil {
			f.t.Fatal(err)
		}
		got := v.ReportsIngested + v.ReportsCompacted + f.lost[name]
		f.t.Logf("cluster %s: %d reports produced, %d ingested, %d compacted by the outbox, %d lost with a wiped disk, %d still in the outbox",
			name, produced, v.ReportsIngested, v.ReportsCompacted, f.lost[name], st.Outbox)
		if got+int64(st.Outbox) != produced || st.Outbox != 0 {
			f.t.Errorf("cluster %s: produced %d reports, but ingested %d + compacted %d + lost with disk %d + unsent %d",
				name, produced, v.ReportsIngested, v.ReportsCompacted, f.lost[name], st.Outbox)
		}
		total += produced
		ingestedTotal += v.ReportsIngested
	}
	f.t.Logf("reports: %d produced, %d ingested", total, ingestedTotal)
}

func tail(path string) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func (f *procFleet) waitStatus(what string, timeout time.Duration, cond func(hubclient.StatusView) bool) hubclient.StatusView {
	f.t.Helper()
	var last hubclient.StatusView
	if err := eventually.Poll(f.t.Context(), timeout, func() error {
		ctx, cancel := context.WithTimeout(f.t.Context(), 5*time.Second)
		defer cancel()
		st, err := f.client.Status(ctx)
		if err != nil {
			return fmt.Errorf("status: %w; last status read:\n%s", err, dump(last))
		}
		if last = st; !cond(last) {
			return fmt.Errorf("not reached; last status:\n%s", dump(last))
		}
		return nil
	}); err != nil {
		f.t.Fatalf("%s: %v\nhub log:\n%s", what, err, tail(f.hub.log))
	}
	return last
}

func readAgentStats(f *procFleet, name string) (agent.Stats, error) {
	return agent.ReadStats(f.stateDir(name))
}

// scrapeAgent returns the Prometheus metrics of a cluster's running agent.
func (f *procFleet) scrapeAgent(name string) string {
	f.t.Helper()
	return f.scrape(f.metrics[name])
}

// scrapeHub returns the hub's Prometheus metrics.
func (f *procFleet) scrapeHub() string {
	f.t.Helper()
	return f.scrape(f.hubMetrics)
}

func (f *procFleet) scrape(addr string) string {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// metric sums the samples of name in the Prometheus text m whose labels hold every one of
// labels (each as written in the text: `release="web"`).
func metric(m, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(m, "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		series, value := line[:i], line[i+1:]
		if n, _, _ := strings.Cut(series, "{"); n != name {
			continue
		}
		held := true
		for _, l := range labels {
			held = held && strings.Contains(series, l)
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil && held {
			sum += v
		}
	}
	return sum
}
