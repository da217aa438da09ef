package fleetsim

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/procstat"
)

// ColdOptions shape a cold start: every agent of a fleet starting at once against a hub
// that has their desired state ready.
type ColdOptions struct {
	// Binary is the flotilla-bench binary that runs the hubs and the agent hosts. Required.
	Binary string
	// Dir holds the run's files. Required.
	Dir string
	// Agents is the number of agents, one one-object release each. Default 10,000.
	Agents int
	// Replicas is the number of hub processes. Default 1 (SQLite); more need Postgres.
	Replicas int
	// Postgres is a server's URL on which the role may CREATE DATABASE: the run creates a
	// database of its own there for the replicas and drops it afterwards.
	Postgres string
	// AgentsPerProcess is how many agents one agent-host process runs. Default 5,000.
	AgentsPerProcess int
	// JoinConcurrency is how many agents register and join at once. Default 16.
	JoinConcurrency int
	// Timeout bounds the joins, and the cold start: agents not synced by then gave up.
	// Default 10m.
	Timeout time.Duration
	// PollInterval is how often the hubs' status API is read. Default 2s.
	PollInterval time.Duration
	// HeartbeatInterval is the agents' heartbeat interval. Default 30s.
	HeartbeatInterval time.Duration
	// HubArgs are extra flags for every `flotilla hub`.
	HubArgs []string
	// HubProfile, when set, is where the first replica's CPU profile is written: for
	// HubProfileFor (default 30s) from the start.
	HubProfile    string
	HubProfileFor time.Duration
	Logger        *slog.Logger
}

// ColdReport is what a cold start cost, and whether it converged.
type ColdReport struct {
	Agents   int    `json:"agents"`
	Releases int    `json:"releases"`
	Replicas int    `json:"replicas"`
	Store    string `json:"store"`
	Spokes   string `json:"spokes"`
	// JoinSeconds registered and joined every agent (JoinConcurrency at a time), before the
	// start; StartSpreadSeconds is how long telling every agent host to start took.
	JoinSeconds        float64 `json:"joinSeconds"`
	StartSpreadSeconds float64 `json:"startSpreadSeconds"`
	// Converged says whether every assignment was Ready at the commit within the timeout;
	// ConvergedSeconds is from the start until then (or until the timeout).
	Converged        bool    `json:"converged"`
	ConvergedSeconds float64 `json:"convergedSeconds"`
	Synced           int     `json:"assignmentsSynced"`
	// HubCPUSeconds is every replica's CPU from the start until converged; HubPeakRSSBytes
	// the largest replica's peak resident memory in that time (VmHWM, reset at the start).
	HubCPUSeconds   float64 `json:"hubCPUSeconds"`
	HubPeakRSSBytes int64   `json:"hubPeakRSSBytes"`
	// Requests, Refused (429 or 503 responses) and RetryAfter (refusals saying when to come
	// back) are counted at the agents' end, from the start until converged.
	Requests   int64 `json:"requests"`
	Refused    int64 `json:"refused"`
	RetryAfter int64 `json:"retryAfter"`
	// RefusedBy splits Refused by what was asked: an RPC's path, or /artifacts/.
	RefusedBy        map[string]int64 `json:"refusedBy,omitempty"`
	BytesHubToSpokes int64            `json:"bytesHubToSpokes"`
	BytesSpokesToHub int64            `json:"bytesSpokesToHub"`
	// AgentsNotSynced had an assignment not Ready at the commit when the run ended;
	// AgentsExited ended their run with an error. Both gave up.
	AgentsNotSynced int    `json:"agentsNotSynced"`
	AgentsExited    int64  `json:"agentsExited"`
	GaveUpExample   string `json:"gaveUpExample,omitempty"`
	// PerReplica is each replica's share.
	PerReplica  []ReplicaShare `json:"perReplica"`
	LoadAverage float64        `json:"loadAverage"`
}

// ReplicaShare is one hub replica's part of a cold start.
type ReplicaShare struct {
	Replica  string `json:"replica"`
	AgentURL string `json:"agentURL"`
	// AgentsPrimary were given this replica first; AgentsConnected had a watch stream open
	// on it when the run ended (its flotilla_hub_agents_connected).
	AgentsPrimary   int `json:"agentsPrimary"`
	AgentsConnected int `json:"agentsConnected"`
	// Downloads is the artifact downloads it served, Requests and Refused the requests
	// agents sent it and the refusals among its answers, BytesToSpokes what it sent.
	Downloads     int64   `json:"artifactDownloads"`
	Requests      int64   `json:"requests"`
	Refused       int64   `json:"refused"`
	BytesToSpokes int64   `json:"bytesToSpokes"`
	CPUSeconds    float64 `json:"cpuSeconds"`
	PeakRSSBytes  int64   `json:"peakRSSBytes"`
}

func (o *ColdOptions) setDefaults() error {
	if o.Binary == "" || o.Dir == "" {
		return errors.New("cold start: a flotilla-bench binary and a work directory are required")
	}
	if o.Agents <= 0 {
		o.Agents = 10000
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Replicas > 1 && o.Postgres == "" {
		return fmt.Errorf("cold start: %d replicas share a PostgreSQL database: give a server URL (postgres://...)", o.Replicas)
	}
	if o.Postgres != "" {
		u, err := url.Parse(o.Postgres)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return fmt.Errorf("cold start: PostgreSQL server %q: want postgres://USER@HOST:PORT/DATABASE", redactURL(o.Postgres))
		}
	}
	if o.AgentsPerProcess <= 0 {
		o.AgentsPerProcess = 5000
	}
	if o.JoinConcurrency <= 0 {
		o.JoinConcurrency = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 30 * time.Second
	}
	if o.HubProfileFor <= 0 {
		o.HubProfileFor = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// coldReplica is one hub process of a cold start.
type coldReplica struct {
	name        string
	hub         *hubProc
	metricsAddr string
	before      procSample
}

// RunCold registers and joins Agents agents (one small release each) in agent-host
// processes, waits until the hub has scheduled every one, then starts all of them within a
// moment and measures until the hub's status API shows every assignment Ready at the commit.
// With Replicas > 1 the hubs share a fresh PostgreSQL database and the agents are spread
// over them.
func RunCold(ctx context.Context, opts ColdOptions) (*ColdReport, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	raiseFileLimit()
	log := opts.Logger
	sim := Options{Binary: opts.Binary, Dir: opts.Dir, Clusters: opts.Agents, Releases: 1, Objects: 1,
		HeartbeatInterval: opts.HeartbeatInterval, PollInterval: opts.PollInterval, JoinConcurrency: opts.JoinConcurrency,
		SourceInterval: time.Minute}
	if err := sim.setDefaults(); err != nil {
		return nil, err
	}
	rep := &ColdReport{Agents: opts.Agents, Releases: 1, Replicas: opts.Replicas, Store: "sqlite", Spokes: SpokesNote}
	src, err := newFleetSource(ctx, sim)
	if err != nil {
		return nil, err
	}
	commit, err := src.commit(ctx, 1)
	if err != nil {
		return nil, err
	}

	// Every simulated agent joins from 127.0.0.1: the per-address join limit (meant for one
	// address per cluster) would otherwise hold all but the first burst back.
	joins := strconv.Itoa(opts.Agents)
	common := append([]string{"--fleet-interval", "2s", "--join-qps", joins, "--join-burst", joins}, opts.HubArgs...)
	if opts.Postgres != "" {
		dsn, drop, err := freshDatabase(ctx, opts.Postgres)
		if err != nil {
			return nil, err
		}
		defer drop()
		rep.Store = "postgres"
		rep.Spokes = strings.Replace(rep.Spokes, "its SQLite store", "their PostgreSQL store", 1)
		// The replicas seal the CA key they share in the store with one key.
		keyFile := filepath.Join(opts.Dir, "secrets.key")
		if err := os.WriteFile(keyFile, []byte(strings.Repeat("5e", 32)+"\n"), 0o600); err != nil {
			return nil, err
		}
		common = append(common, "--store", dsn, "--secrets-key-file", keyFile)
	}
	pprofAddr := ""
	replicas := make([]*coldReplica, opts.Replicas)
	var started []*hubProc
	defer func() { // every replica that started is killed on the way out, the last first
		for _, h := range slices.Backward(started) {
			h.kill()
		}
	}()
	for i := range replicas {
		r := &coldReplica{name: fmt.Sprintf("replica-%d", i+1)}
		if r.metricsAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		args := append([]string{"--metrics-addr", r.metricsAddr}, common...)
		if opts.Postgres != "" {
			args = append(args, "--replica-id", r.name)
		}
		if i == 0 && opts.HubProfile != "" {
			if pprofAddr, err = freeLoopbackAddr(); err != nil {
				return nil, err
			}
			args = append(args, "--pprof-addr", pprofAddr)
		}
		// One after the other: the first replica puts the CA and the admin token's hash in the store,
		// the later ones take them from there.
		if err := os.MkdirAll(filepath.Join(opts.Dir, r.name), 0o755); err != nil {
			return nil, err
		}
		r.hub = newHubProc(opts.Binary, filepath.Join(opts.Dir, r.name, "hub"), src.fleetDir, args)
		if err := r.hub.start(ctx); err != nil {
			return nil, fmt.Errorf("cold start: %s: %w", r.name, err)
		}
		started = append(started, r.hub)
		replicas[i] = r
	}
	api, err := replicas[0].hub.client()
	if err != nil {
		return nil, err
	}
	urls := make([]string, len(replicas))
	for i, r := range replicas {
		urls[i] = r.hub.agentURL()
	}

	log.Info("hub started; registering and joining agents", "agents", opts.Agents, "replicas", opts.Replicas)
	begin := time.Now()
	fleet, err := startHosts(ctx, opts.Binary, opts.Dir, urls, api, sim, opts.Agents, opts.AgentsPerProcess, true)
	if err != nil {
		return nil, err
	}
	defer fleet.stop()
	lastLog := time.Now()
	err = waitCounters(ctx, fleet, opts.Timeout, "agents joined", func(c HostCounters) bool {
		if time.Since(lastLog) > 10*time.Second {
			log.Info("joining", "joined", c.Joined, "of", opts.Agents)
			lastLog = time.Now()
		}
		return c.Joined >= int64(opts.Agents)
	})
	if err != nil {
		return nil, fmt.Errorf("cold start: %w", err)
	}
	rep.JoinSeconds = time.Since(begin).Seconds()
	log.Info("agents joined; waiting for the hub to schedule them", "seconds", rep.JoinSeconds)
	if err := waitScheduled(ctx, api, opts, commit); err != nil {
		return nil, err
	}

	for _, r := range replicas {
		if err := procstat.ResetPeak(r.hub.pid()); err != nil {
			return nil, fmt.Errorf("reset the hub's peak memory: %w", err)
		}
		if r.before, err = sampleProc(r.hub.pid()); err != nil {
			return nil, err
		}
	}
	t0, err := fleet.freshCounters(ctx)
	if err != nil {
		return nil, err
	}
	profiled := make(chan error, 1)
	start := time.Now()
	if err := fleet.start(); err != nil {
		return nil, err
	}
	rep.StartSpreadSeconds = time.Since(start).Seconds()
	if pprofAddr != "" {
		go func() { profiled <- profileHub(ctx, pprofAddr, opts.HubProfileFor, opts.HubProfile) }()
	} else {
		profiled <- nil
	}
	log.Info("every agent started", "agents", opts.Agents)
	progress, err := waitCold(ctx, api, fleet, opts, commit, start)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	rep.ConvergedSeconds = took.Seconds()
	rep.Converged = progress.done == opts.Agents && len(progress.notSynced) == 0
	rep.Synced = progress.done
	rep.AgentsNotSynced = len(progress.notSynced)
	if !rep.Converged {
		// Clusters the hub has no assignment row for count too.
		rep.AgentsNotSynced = max(rep.AgentsNotSynced, opts.Agents-progress.done)
		rep.GaveUpExample = progress.failed
	}
	t, err := fleet.freshCounters(ctx)
	if err != nil {
		return nil, err
	}
	rep.Requests, rep.Refused, rep.RetryAfter = t.Requests-t0.Requests, t.Refused-t0.Refused, t.RetryAfter-t0.RetryAfter
	rep.BytesHubToSpokes, rep.BytesSpokesToHub = t.FromHub-t0.FromHub, t.ToHub-t0.ToHub
	for what, n := range t.RefusedBy {
		if d := n - t0.RefusedBy[what]; d > 0 {
			if rep.RefusedBy == nil {
				rep.RefusedBy = map[string]int64{}
			}
			rep.RefusedBy[what] = d
		}
	}
	rep.AgentsExited = t.Exited
	if rep.GaveUpExample == "" && t.ExitError != "" {
		rep.GaveUpExample = t.ExitError
	}
	for i, r := range replicas {
		s, err := sampleProc(r.hub.pid())
		if err != nil {
			return nil, err
		}
		h0, h := t0.Hubs[r.hub.agentAddr], t.Hubs[r.hub.agentAddr]
		share := ReplicaShare{Replica: r.name, AgentURL: r.hub.agentURL(),
			AgentsPrimary: opts.Agents/len(replicas) + b2i(i < opts.Agents%len(replicas)),
			Downloads:     h.Downloads - h0.Downloads, Requests: h.Requests - h0.Requests, Refused: h.Refused - h0.Refused,
			BytesToSpokes: h.FromHub - h0.FromHub,
			CPUSeconds:    (s.CPU - r.before.CPU).Seconds(), PeakRSSBytes: s.Peak}
		if share.AgentsConnected, err = agentsConnected(ctx, r.metricsAddr); err != nil {
			log.Warn("agents connected not read", "replica", r.name, "error", err)
		}
		rep.HubCPUSeconds += share.CPUSeconds
		rep.HubPeakRSSBytes = max(rep.HubPeakRSSBytes, share.PeakRSSBytes)
		rep.PerReplica = append(rep.PerReplica, share)
	}
	rep.LoadAverage = loadAverage()
	if err := <-profiled; err != nil {
		log.Warn("hub profile not recorded", "error", err)
	}
	for _, r := range replicas {
		if err := r.hub.stop(); err != nil {
			log.Warn("stop hub", "replica", r.name, "error", err)
		}
	}
	return rep, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitScheduled waits until the hub has every agent's assignment at the commit, so that the
// cold start measures the agents and the hub serving them, not the hub's first poll.
func waitScheduled(ctx context.Context, api *hubclient.Client, opts ColdOptions, commit string) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	last := ""
	for {
		st, err := api.Status(ctx)
		if err == nil {
			n := 0
			for _, a := range st.Assignments {
				if strings.Contains(a.DesiredRevision, commit) {
					n++
				}
			}
			if n == opts.Agents {
				return nil
			}
			last = fmt.Sprintf("%d of %d assignments scheduled at %s", n, opts.Agents, commit)
			if st.Fleet.Error != "" {
				return fmt.Errorf("cold start: the hub rejected the generated fleet configuration: %s", st.Fleet.Error)
			}
		} else {
			last = err.Error()
		}
		if !sleep(ctx, opts.PollInterval) {
			return fmt.Errorf("cold start: the hub did not schedule every agent within %s: %s", opts.Timeout, last)
		}
	}
}

// waitCold polls the hub's status API until every assignment is Ready at the commit or the
// timeout passes, logging progress every 10 seconds; it returns the last progress read.
func waitCold(ctx context.Context, api *hubclient.Client, fleet *hostedFleet, opts ColdOptions, commit string, start time.Time) (syncProgress, error) {
	deadline := start.Add(opts.Timeout)
	var last syncProgress
	read := false
	lastLog := time.Now()
	for {
		rctx, cancel := context.WithTimeout(ctx, max(opts.PollInterval, 30*time.Second))
		st, err := api.Status(rctx)
		cancel()
		if err == nil {
			last, read = syncProgressOf(st, commit), true
			if last.done == opts.Agents && len(last.notSynced) == 0 {
				return last, nil
			}
		} else if ctx.Err() != nil {
			return last, ctx.Err()
		}
		if c, cerr := fleet.counters(); cerr == nil && time.Since(lastLog) >= 10*time.Second {
			opts.Logger.Info("cold start", "seconds", int(time.Since(start).Seconds()), "synced", last.done, "of", opts.Agents,
				"failed", last.failedCount, "refused", c.Refused, "open", c.Open, "exited", c.Exited)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			if !read {
				return last, fmt.Errorf("cold start: the hub's status was not read within %s: %v", opts.Timeout, err)
			}
			return last, nil
		}
		if !sleep(ctx, opts.PollInterval) {
			return last, ctx.Err()
		}
	}
}

// agentsConnected reads flotilla_hub_agents_connected from a hub's metrics endpoint.
func agentsConnected(ctx context.Context, addr string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flotilla_hub_agents_connected "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("metrics %s: flotilla_hub_agents_connected %q: %w", addr, v, err)
			}
			return int(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics %s: %w", addr, err)
	}
	return 0, fmt.Errorf("metrics %s: no flotilla_hub_agents_connected", addr)
}

// freshDatabase creates a database of the run's own on the server, so that runs do not see
// each other's rows, and returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, server string) (string, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, server)
	if err != nil {
		return "", nil, fmt.Errorf("cold start: PostgreSQL %s: %w (`make postgres` serves one on 127.0.0.1:55432)", redactURL(server), err)
	}
	defer func() { _ = conn.Close(context.Background()) }() // on the way out: the queries' own errors are checked
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "flotilla_cold_" + hex.EncodeToString(b)
	if _, err := conn.Exec(cctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("cold start: create database %s on %s: %w", name, redactURL(server), err)
	}
	u, _ := url.Parse(server) // parsed in setDefaults
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return
		}
		defer func() { _ = conn.Close(ctx) }() // on the way out: the queries' own errors are checked
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

// redactURL hides a URL's password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// WriteJSON writes the report as indented JSON.
func (r *ColdReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people.
func (r *ColdReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Cold start: %d agents (one one-object release each) started within %.2fs; %d hub replica(s) on %s\n%s\n\n",
		r.Agents, r.StartSpreadSeconds, r.Replicas, r.Store, r.Spokes)
	state := "converged"
	if !r.Converged {
		state = "NOT converged"
	}
	fmt.Fprintf(w, "joined in %.1fs (before the start)\n", r.JoinSeconds)
	fmt.Fprintf(w, "%s: %d of %d assignments Ready after %.1fs\n", state, r.Synced, r.Agents, r.ConvergedSeconds)
	fmt.Fprintf(w, "hub CPU %.1fs (all replicas), peak RSS %.0f MiB (largest replica); load average %.2f\n",
		r.HubCPUSeconds, float64(r.HubPeakRSSBytes)/(1<<20), r.LoadAverage)
	fmt.Fprintf(w, "at the agents: %d requests, %d refused (%d with Retry-After); %s to agents, %s from agents\n",
		r.Requests, r.Refused, r.RetryAfter, humanBytes(r.BytesHubToSpokes), humanBytes(r.BytesSpokesToHub))
	for _, what := range slices.Sorted(maps.Keys(r.RefusedBy)) {
		fmt.Fprintf(w, "  refused %s: %d\n", what, r.RefusedBy[what])
	}
	fmt.Fprintf(w, "agents that gave up: %d not Ready at the end, %d ended their run with an error\n", r.AgentsNotSynced, r.AgentsExited)
	if r.GaveUpExample != "" {
		fmt.Fprintf(w, "  e.g. %s\n", r.GaveUpExample)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "replica\tagents (first choice)\tconnected at the end\tartifact downloads\trequests\trefused\tto agents\tCPU\tpeak RSS")
	for _, s := range r.PerReplica {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%.1fs\t%.0f MiB\n", s.Replica, s.AgentsPrimary, s.AgentsConnected, s.Downloads,
			s.Requests, s.Refused, humanBytes(s.BytesToSpokes), s.CPUSeconds, float64(s.PeakRSSBytes)/(1<<20))
	}
	return tw.Flush()
}
