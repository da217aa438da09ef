package fleetsim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/hubapi"
)

// hostedFleet is a fleet whose agents run in agent-host processes; it sums their counters.
type hostedFleet struct {
	cmds   []*exec.Cmd
	stdins []io.WriteCloser
	mu     sync.Mutex
	latest []HostCounters
	done   sync.WaitGroup
}

// startHosts registers n clusters through the user API and starts agent hosts of at most
// perHost agents each.
func startHosts(ctx context.Context, bin, dir, hubURL string, api *hubapi.Client, sim Options, n, perHost int) (*hostedFleet, error) {
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
			agents[i] = HostedAgent{Cluster: name, Token: j.JoinToken}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	f := &hostedFleet{}
	for i := 0; i*perHost < n; i++ {
		spec := AgentHostSpec{HubURL: hubURL, StateDir: filepath.Join(dir, "agents"), Agents: agents[i*perHost : min((i+1)*perHost, n)],
			HeartbeatInterval: sim.HeartbeatInterval, ReportInterval: sim.ReportInterval, JoinConcurrency: sim.JoinConcurrency}
		file := filepath.Join(dir, fmt.Sprintf("agent-host-%d.json", i))
		data, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "bench", "agent-host", "--spec", file)
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
	}
	return sum, nil
}

// stop ends every host (closing its stdin) and waits for it.
func (f *hostedFleet) stop() {
	for _, in := range f.stdins {
		in.Close()
	}
	for _, c := range f.cmds {
		_ = c.Wait()
	}
	f.done.Wait()
}
