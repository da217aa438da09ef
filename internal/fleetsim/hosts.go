package fleetsim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// hostedFleet is a fleet whose agents run in agent-host processes; it sums their counters.
type hostedFleet struct {
	cmds   []*exec.Cmd
	stdins []io.WriteCloser
	mu     sync.Mutex
	latest []HostCounters
	lines  []int64 // reports read from each host
	done   sync.WaitGroup
}

// startHosts registers n clusters through the user API and starts agent hosts of at most
// perHost agents each. The agents are spread over hubURLs (a hub's replicas) in turn, each
// with the others to fail over to. With waitStart the hosts join their agents and wait for
// start to run them.
func startHosts(ctx context.Context, bin, dir string, hubURLs []string, api *hubclient.Client, sim Options, n, perHost int, waitStart bool) (*hostedFleet, error) {
	agents := make([]HostedAgent, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sim.JoinConcurrency)
	for i := range n {
		g.Go(func() error {
			name := clusterName(i)
			j, err := api.AddCluster(gctx, name, simLabels)
			if err != nil {
				return fmt.Errorf("cluster %s: add: %w", name, err)
			}
			agents[i] = HostedAgent{Cluster: name, Token: j.JoinToken, Primary: i % len(hubURLs)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	f := &hostedFleet{}
	for i := 0; i*perHost < n; i++ {
		spec := AgentHostSpec{HubURLs: hubURLs, WaitForStart: waitStart, StateDir: filepath.Join(dir, "agents"), Agents: agents[i*perHost : min((i+1)*perHost, n)],
			HeartbeatInterval: sim.HeartbeatInterval, ReportInterval: sim.ReportInterval, JoinConcurrency: sim.JoinConcurrency}
		file := filepath.Join(dir, fmt.Sprintf("agent-host-%d.json", i))
		data, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, bin, "agent-host", "--spec", file)
		stdin, err := cmd.StdinPipe() // closed to stop the host
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			f.stop()
			return nil, fmt.Errorf("start agent host: %w", err)
		}
		f.cmds, f.stdins = append(f.cmds, cmd), append(f.stdins, stdin)
		f.latest = append(f.latest, HostCounters{})
		f.lines = append(f.lines, 0)
		f.done.Add(1)
		go f.read(i, stdout)
	}
	return f, nil
}

func (f *hostedFleet) read(i int, r io.Reader) {
	defer f.done.Done()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var c HostCounters
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			continue
		}
		f.mu.Lock()
		f.latest[i] = c
		f.lines[i]++
		f.mu.Unlock()
	}
}

// counters sums the hosts' last reports; it returns the first host error.
func (f *hostedFleet) counters() (HostCounters, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sum HostCounters
	for i, c := range f.latest {
		if c.Error != "" {
			return sum, fmt.Errorf("agent host %d: %s", i, c.Error)
		}
		sum.Joined += c.Joined
		sum.Dials += c.Dials
		sum.Open += c.Open
		sum.ToHub += c.ToHub
		sum.FromHub += c.FromHub
		sum.Requests += c.Requests
		sum.Refused += c.Refused
		sum.RetryAfter += c.RetryAfter
		for what, n := range c.RefusedBy {
			if sum.RefusedBy == nil {
				sum.RefusedBy = map[string]int64{}
			}
			sum.RefusedBy[what] += n
		}
		sum.Exited += c.Exited
		if sum.ExitError == "" {
			sum.ExitError = c.ExitError
		}
		for addr, h := range c.Hubs {
			if sum.Hubs == nil {
				sum.Hubs = map[string]HubCounters{}
			}
			x := sum.Hubs[addr]
			x.Dials += h.Dials
			x.Open += h.Open
			x.FromHub += h.FromHub
			x.Requests += h.Requests
			x.Refused += h.Refused
			x.Downloads += h.Downloads
			sum.Hubs[addr] = x
		}
	}
	return sum, nil
}

// freshCounters waits until every host has reported after the call (hosts report every half
// second), so that the sum includes everything until now, and returns it.
func (f *hostedFleet) freshCounters(ctx context.Context) (HostCounters, error) {
	f.mu.Lock()
	seen := append([]int64(nil), f.lines...)
	f.mu.Unlock()
	// Two reports: the first may have been encoded before the call.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		fresh := true
		for i, n := range f.lines {
			fresh = fresh && n >= seen[i]+2
		}
		f.mu.Unlock()
		if fresh {
			return f.counters()
		}
		if time.Now().After(deadline) {
			return HostCounters{}, errors.New("agent hosts: no report for 10s")
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return HostCounters{}, ctx.Err()
		}
	}
}

// start tells every host to run its agents (their hosts started with waitStart).
func (f *hostedFleet) start() error {
	for i, in := range f.stdins {
		if _, err := io.WriteString(in, "start\n"); err != nil {
			return fmt.Errorf("start agent host %d: %w", i, err)
		}
	}
	return nil
}

// stop ends every host (closing its stdin) and waits for it.
func (f *hostedFleet) stop() {
	for _, in := range f.stdins {
		_ = in.Close() // the host sees EOF; Wait below says how it ended
	}
	for _, c := range f.cmds {
		_ = c.Wait()
	}
	f.done.Wait()
}
