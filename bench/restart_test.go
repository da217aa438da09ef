package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/procstat"
)

var (
	restartAgents = flag.Int("restart-agents", 500, "agents in BenchmarkHubRestartStorm")
	outage        = flag.Duration("outage", 2*time.Minute, "hub outage in BenchmarkHubOutage")
)

// hubProc runs `flotilla hub` as a subprocess on fixed addresses, so it can be killed and
// started again where agents expect it.
type hubProc struct {
	b         *testing.B
	bin, dir  string
	fleet     string
	agentAddr string
	apiAddr   string
	cmd       *exec.Cmd
}

func (h *hubProc) start() {
	h.b.Helper()
	h.cmd = exec.Command(h.bin, "hub", "--data-dir", h.dir, "--fleet", h.fleet, "--fleet-path", "fleet",
		"--agent-addr", h.agentAddr, "--api-addr", h.apiAddr, "--fleet-interval", "1s", "--log-level", "warn",
		"--agent-qps", "50", "--agent-burst", "100", "--global-qps", "5000", "--global-burst", "10000",
		"--allow-file-sources", strings.TrimPrefix(h.fleet, "file://")) // the sources are the fleet repository
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		h.b.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		h.b.Fatal(err)
	}
	readHubAddresses(h.b, stderr)
}

func (h *hubProc) kill() {
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait() // killed: its exit error says so and nothing more
}

func (h *hubProc) client() *hubclient.Client {
	token, err := os.ReadFile(filepath.Join(h.dir, "admin.token"))
	if err != nil {
		h.b.Fatal(err)
	}
	c, err := hubclient.NewClient(hubclient.Config{Hub: "https://" + h.apiAddr, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(h.dir, "ca.crt")})
	if err != nil {
		h.b.Fatal(err)
	}
	return c
}

func newHubProc(b *testing.B, fleet string) *hubProc {
	h := &hubProc{b: b, bin: buildFlotilla(b), dir: filepath.Join(b.TempDir(), "hub"), fleet: fleet,
		agentAddr: freeLoopback(b), apiAddr: freeLoopback(b)}
	h.start()
	b.Cleanup(h.kill)
	return h
}

// BenchmarkHubRestartStorm connects many agents (real agents, in this process; their clusters
// are unreachable, which does not matter for reconnecting) to a hub process through a
// counting proxy, kills the hub, keeps it down 10s, starts it again, and reports how the
// agents came back: the time until every agent had reconnected, the most connections the
// hub accepted in any one second (a thundering herd would put them all in the first), and
// the restarted hub's peak memory.
//
//	go test -run '^$' -bench HubRestartStorm -benchtime 1x ./bench [-restart-agents 500]
func BenchmarkHubRestartStorm(b *testing.B) {
	for b.Loop() {
		fleetDir := b.TempDir()
		newFleetRepo(b, fleetDir)
		h := newHubProc(b, "file://"+fleetDir)
		proxy, err := faultproxy.Start(h.agentAddr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { proxy.Close() }) // cleanups, not defers: each iteration's hub is one too (newHubProc)
		client := h.client()
		ctx, stop := context.WithCancel(b.Context())
		b.Cleanup(stop)
		n := *restartAgents
		unreachable := &rest.Config{Host: "https://" + freeLoopback(b)}
		for i := range n {
			j, err := client.AddCluster(ctx, fmt.Sprintf("c%04d", i), map[string]string{"env": "none"})
			if err != nil {
				b.Fatal(err)
			}
			a, err := agent.New(ctx, agent.Options{HubURL: "https://" + proxy.Addr(), JoinToken: j.JoinToken, RESTConfig: unreachable,
				StateDir: filepath.Join(b.TempDir(), "a"), HeartbeatInterval: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				if err := a.Run(ctx); err != nil {
					b.Errorf("agent: %v", err)
				}
				a.Close()
			}()
		}
		eventually.Within(b, 2*time.Minute, func() error {
			if active := proxy.Active(); active < n {
				return fmt.Errorf("%d of %d agents connected", active, n)
			}
			return nil
		})

		h.kill()
		// Real time: the outage is what the agents' reconnect backoff is measured against.
		time.Sleep(10 * time.Second)
		before := proxy.Accepted()
		h.start()
		restarted := time.Now()
		perSecond := map[int]int64{}
		last := before
		// Each poll adds the accepts since the last one to its second since the restart.
		err = eventually.Poll(ctx, 3*time.Minute, func() error {
			now := proxy.Accepted()
			perSecond[int(time.Since(restarted).Seconds())] += now - last
			last = now
			if active := proxy.Active(); active < n {
				return fmt.Errorf("%d of %d agents reconnected", active, n)
			}
			return nil
		})
		back := time.Since(restarted)
		if err != nil {
			b.Logf("reported as it stands: %v", err) // as before: the metrics say how far they came
		}
		var peak int64
		for _, v := range perSecond {
			peak = max(peak, v)
		}
		hwm, err := procstat.Bytes(h.cmd.Process.Pid, procstat.Peak)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(back.Seconds(), "all-reconnected-s")
		b.ReportMetric(float64(peak), "peak-accepts/s")
		b.ReportMetric(float64(last-before), "accepts")
		b.ReportMetric(float64(hwm)/(1<<20), "hub-peak-MiB")
		b.Logf("%d agents; reconnects per second after the restart: %v", n, perSecond)
		stop()
	}
}

// BenchmarkHubOutage takes the hub down for -outage (2 minutes by default) while three real
// clusters keep running, commits a change during the outage, and reports the time from the
// hub's restart until every cluster runs the new commit.
//
//	go test -run '^$' -bench HubOutage -benchtime 1x -timeout 20m ./bench
func BenchmarkHubOutage(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		repo := newFleetRepo(b, filepath.Join(dir, "fleet"))
		h := newHubProc(b, "file://"+repo.dir)
		client := h.client()
		clusters, err := localcluster.StartAll(b.Context(), []localcluster.Options{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := localcluster.StopAll(clusters); err != nil {
				b.Error(err)
			}
		})
		ctx, stop := context.WithCancel(b.Context())
		b.Cleanup(stop)
		for _, c := range clusters {
			j, err := client.AddCluster(ctx, c.Name(), map[string]string{"env": "prod"})
			if err != nil {
				b.Fatal(err)
			}
			a, err := agent.New(ctx, agent.Options{HubURL: "https://" + h.agentAddr, JoinToken: j.JoinToken, RESTConfig: c.RESTConfig(), StateDir: filepath.Join(dir, c.Name())})
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				if err := a.Run(ctx); err != nil {
					b.Errorf("agent: %v", err)
				}
				a.Close()
			}()
		}
		waitAllReady(b, client, "")

		h.kill()
		commit := repo.commit(b, map[string]string{"apps/web/config.yaml": configYAML("during-outage")})
		// Real time: the outage's length is the benchmark's parameter.
		time.Sleep(*outage)
		h.start()
		restarted := time.Now()
		waitAllReady(b, client, commit)
		b.ReportMetric(time.Since(restarted).Seconds(), "converged-after-restart-s")
		b.ReportMetric(outage.Seconds(), "outage-s")
		stop()
	}
}

func freeLoopback(b *testing.B) string {
	b.Helper()
	p, err := faultproxy.Start("127.0.0.1:1")
	if err != nil {
		b.Fatal(err)
	}
	addr := p.Addr()
	p.Close()
	return addr
}
