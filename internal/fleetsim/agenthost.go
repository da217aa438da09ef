package fleetsim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/agent"
)

// An agent host runs a share of a big simulated fleet's agents in its own process (`flotilla-bench
// agent-host`, started by the idle-fleet runner): every simulated agent holds two file
// descriptors (its connection and its state file), and one process may not have enough.

// AgentHostSpec says which agents a host runs.
type AgentHostSpec struct {
	// HubURLs are the hub's agent endpoints (its replicas); each agent uses its Primary
	// one first and the others, in order after it, when that one cannot be reached.
	HubURLs           []string      `json:"hubURLs"`
	StateDir          string        `json:"stateDir"`
	Agents            []HostedAgent `json:"agents"`
	HeartbeatInterval time.Duration `json:"heartbeatInterval"`
	ReportInterval    time.Duration `json:"reportInterval"`
	JoinConcurrency   int           `json:"joinConcurrency"`
	// WaitForStart joins every agent, then waits for a line "start" on the host's input
	// before running them, so that the runner can start all hosts' agents within a moment.
	WaitForStart bool `json:"waitForStart,omitempty"`
}

// HostedAgent is one cluster and its join token.
type HostedAgent struct {
	Cluster string `json:"cluster"`
	Token   string `json:"token"`
	// Primary indexes the spec's HubURLs: the endpoint the agent joins and uses first.
	Primary int `json:"primary,omitempty"`
}

// hubURLs is the agent's endpoints, its primary first.
func (s AgentHostSpec) hubURLs(h HostedAgent) (string, []string) {
	n := len(s.HubURLs)
	p := h.Primary % n
	var rest []string
	for i := 1; i < n; i++ {
		rest = append(rest, s.HubURLs[(p+i)%n])
	}
	return s.HubURLs[p], rest
}

// HostCounters is what a host reports, one JSON line every half second: agents joined, and
// the traffic and connections of all of them so far.
type HostCounters struct {
	Joined   int64 `json:"joined"`
	Started  bool  `json:"started,omitempty"`
	Dials    int64 `json:"dials"`
	Open     int64 `json:"open"`
	ToHub    int64 `json:"toHub"`
	FromHub  int64 `json:"fromHub"`
	Requests int64 `json:"requests"`
	// Refused is the responses that turned a request away (429, 503), RetryAfter those that
	// said when to come back.
	Refused    int64            `json:"refused"`
	RetryAfter int64            `json:"retryAfter"`
	RefusedBy  map[string]int64 `json:"refusedBy,omitempty"`
	// Exited is the agents whose run ended on its own, with an error (they gave up);
	// ExitError is the first such error.
	Exited    int64                  `json:"exited"`
	ExitError string                 `json:"exitError,omitempty"`
	Hubs      map[string]HubCounters `json:"hubs,omitempty"`
	Error     string                 `json:"error,omitempty"`
}

// RunAgentHost joins and runs spec's agents until ctx ends or in ends, writing HostCounters
// lines to out. With spec.WaitForStart the agents run only once in says "start".
func RunAgentHost(ctx context.Context, spec AgentHostSpec, in io.Reader, out io.Writer) error {
	if len(spec.HubURLs) == 0 {
		return fmt.Errorf("agent host: no hub URL in the spec")
	}
	raiseFileLimit()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := make(chan struct{})
	go func() {
		// The runner says "start" (with WaitForStart), and closes the input to stop the host.
		sc := bufio.NewScanner(in)
		started := false
		for sc.Scan() {
			if sc.Text() == "start" && !started {
				started = true
				close(start)
			}
		}
		cancel()
	}()
	var m meter
	enc := json.NewEncoder(out)
	agents := make([]*agent.Agent, len(spec.Agents))
	var joined atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(spec.JoinConcurrency, 1))
	for i, h := range spec.Agents {
		g.Go(func() error {
			first, more := spec.hubURLs(h)
			a, err := agent.New(gctx, agent.Options{
				HubURL: first, HubURLs: more, JoinToken: h.Token, Target: NewMemCluster(h.Cluster), StateDir: filepath.Join(spec.StateDir, h.Cluster),
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
	// Report the joins while they happen: the runner measures the join storm.
	joinDone := make(chan error, 1)
	go func() { joinDone <- g.Wait() }()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var (
		exited   atomic.Int64
		exitMu   sync.Mutex
		exitErr  string
		started  bool
		runCtx   context.Context
		wg       sync.WaitGroup
		stopRuns = func() {}
	)
	defer func() { stopRuns(); wg.Wait(); closeAgents(agents) }()
	report := func() error {
		s := m.snapshot()
		exitMu.Lock()
		e := exitErr
		exitMu.Unlock()
		return enc.Encode(HostCounters{Joined: joined.Load(), Started: started, Dials: m.dials.Load(), Open: m.open.Load(),
			ToHub: s.ToHub, FromHub: s.FromHub, Requests: s.Requests, Refused: m.refused.Load(), RetryAfter: m.retryAfter.Load(),
			RefusedBy: m.refusals(), Exited: exited.Load(), ExitError: e, Hubs: m.perHub()})
	}
	run := func() {
		started = true
		runCtx, stopRuns = context.WithCancel(ctx)
		for _, a := range agents {
			wg.Go(func() {
				if err := a.Run(runCtx); err != nil && runCtx.Err() == nil {
					exited.Add(1)
					exitMu.Lock()
					if exitErr == "" {
						exitErr = err.Error()
					}
					exitMu.Unlock()
				}
			})
		}
	}
	joining := true
	for {
		select {
		case err := <-joinDone:
			joining = false
			if err != nil {
				_ = enc.Encode(HostCounters{Joined: joined.Load(), Error: err.Error()})
				return err
			}
			if !spec.WaitForStart {
				run()
			}
			joinDone = nil
		case <-start:
			start = nil
			if joining {
				// Started before every agent joined: run them as soon as they have.
				if err := <-joinDone; err != nil {
					_ = enc.Encode(HostCounters{Joined: joined.Load(), Error: err.Error()})
					return err
				}
				joinDone, joining = nil, false
			}
			if !started {
				run()
			}
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := report(); err != nil {
			return err // the runner is gone
		}
	}
}

func closeAgents(agents []*agent.Agent) {
	for _, a := range agents {
		if a != nil {
			_ = a.Close() // shutting down: the state was committed as it went
		}
	}
}
