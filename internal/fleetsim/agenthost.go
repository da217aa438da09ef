package fleetsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/agent"
)

// An agent host runs a share of a big simulated fleet's agents in its own process (`flotilla
// bench agent-host`, started by the idle-fleet runner): every simulated agent holds two file
// descriptors (its connection and its state file), and one process may not have enough.

// AgentHostSpec says which agents a host runs.
type AgentHostSpec struct {
	HubURL            string        `json:"hubURL"`
	StateDir          string        `json:"stateDir"`
	Agents            []HostedAgent `json:"agents"`
	HeartbeatInterval time.Duration `json:"heartbeatInterval"`
	ReportInterval    time.Duration `json:"reportInterval"`
	JoinConcurrency   int           `json:"joinConcurrency"`
}

// HostedAgent is one cluster and its join token.
type HostedAgent struct {
	Cluster string `json:"cluster"`
	Token   string `json:"token"`
}

// HostCounters is what a host reports, one JSON line every half second: agents joined, and
// the traffic and connections of all of them so far.
type HostCounters struct {
	Joined   int64  `json:"joined"`
	Dials    int64  `json:"dials"`
	Open     int64  `json:"open"`
	ToHub    int64  `json:"toHub"`
	FromHub  int64  `json:"fromHub"`
	Requests int64  `json:"requests"`
	Error    string `json:"error,omitempty"`
}

// RunAgentHost joins and runs spec's agents until ctx ends, writing HostCounters lines to out.
func RunAgentHost(ctx context.Context, spec AgentHostSpec, out io.Writer) error {
	raiseFileLimit()
	var m meter
	enc := json.NewEncoder(out)
	agents := make([]*agent.Agent, len(spec.Agents))
	var joined atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(spec.JoinConcurrency, 1))
	for i, h := range spec.Agents {
		g.Go(func() error {
			a, err := agent.New(gctx, agent.Options{
				HubURL: spec.HubURL, JoinToken: h.Token, Target: NewMemCluster(h.Cluster), StateDir: filepath.Join(spec.StateDir, h.Cluster),
				Version: "fleetsim", ReportInterval: spec.ReportInterval, HeartbeatInterval: spec.HeartbeatInterval,
				DialContext: m.dial, WrapTransport: m.wrap,
			})
			if err != nil {
				return fmt.Errorf("cluster %s: agent: %w", h.Cluster, err)
			}
			agents[i] = a
			joined.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		_ = enc.Encode(HostCounters{Error: err.Error()})
		return err
	}
	f := &pullFleet{agents: agents}
	runCtx, stop := context.WithCancel(ctx)
	defer f.wait()
	defer stop()
	f.run(runCtx)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		s := m.snapshot()
		if err := enc.Encode(HostCounters{Joined: joined.Load(), Dials: m.dials.Load(), Open: m.open.Load(), ToHub: s.ToHub, FromHub: s.FromHub, Requests: s.Requests}); err != nil {
			return err // the runner is gone
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
