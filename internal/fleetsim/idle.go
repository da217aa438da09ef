package fleetsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/flotilla/flotilla/internal/procstat"
)

// IdleOptions shape an idle-fleet run.
type IdleOptions struct {
	// Binary is the flotilla-bench binary that runs the hub and the agent hosts. Required.
	Binary string
	// Dir holds the run's files. Required.
	Dir string
	// Agents is the number of connected agents. Default 10,000.
	Agents int
	// Window is how long the idle fleet is measured. Default 1m.
	Window time.Duration
	// Restart restarts the hub after the window and measures the reconnection storm.
	Restart bool
	// Down is how long the hub stays down on restart. Default 10s.
	Down time.Duration
	// HeartbeatInterval is the agents' heartbeat interval. Default 30s (the agent's default).
	HeartbeatInterval time.Duration
	// JoinConcurrency is how many agents register and join at once. Default 16.
	JoinConcurrency int
	// Releases is how many one-object releases every agent applies before the window. Default
	// 0: the agents only hold their watch streams and send heartbeats.
	Releases int
	// AgentsPerProcess is how many agents one agent-host process runs: each holds two file
	// descriptors (its connection and its state file). Default 5,000.
	AgentsPerProcess int
	// Timeout bounds the first sync and the reconnection. Default 20m.
	Timeout time.Duration
	// HubArgs are extra flags for `flotilla hub`.
	HubArgs []string
	// HubProfile, when set, is where the hub's CPU profile over the idle window is written.
	HubProfile string
	Logger     *slog.Logger
}

// IdleReport is what an idle fleet costs the hub.
type IdleReport struct {
	Agents   int    `json:"agents"`
	Releases int    `json:"releases"`
	Spokes   string `json:"spokes"`
	// JoinSeconds registered and joined every agent; SyncSeconds brought every agent's one
	// small release to Ready.
	JoinSeconds float64 `json:"joinSeconds"`
	SyncSeconds float64 `json:"syncSeconds"`
	// WindowSeconds is the measured idle window: the hub's CPU in it (seconds, and percent of
	// one core), its resident memory at the end, and the traffic and requests in it.
	WindowSeconds     float64 `json:"windowSeconds"`
	HubCPUSeconds     float64 `json:"hubCPUSeconds"`
	HubCPUPercentCore float64 `json:"hubCPUPercentOfOneCore"`
	HubRSSBytes       int64   `json:"hubRSSBytes"`
	HubPeakRSSBytes   int64   `json:"hubPeakRSSBytes"`
	BytesHubToSpokes  int64   `json:"bytesHubToSpokes"`
	BytesSpokesToHub  int64   `json:"bytesSpokesToHub"`
	Requests          int64   `json:"requests"`
	// Connects is how many connections agents opened in the window (TLS handshakes).
	Connects int64 `json:"connects"`
	// Restart, when measured: the hub was stopped with every agent connected and started
	// again after DownSeconds.
	Restart *RestartReport `json:"restart,omitempty"`
}

// RestartReport is a hub restart with the idle fleet connected.
type RestartReport struct {
	DownSeconds float64 `json:"downSeconds"`
	// AllBackSeconds: from the restarted hub's start until every agent had a connection
	// open again.
	AllBackSeconds float64 `json:"allBackSeconds"`
	// PeakConnectsPerSecond: the most connections agents opened in any one second.
	PeakConnectsPerSecond int64 `json:"peakConnectsPerSecond"`
	// HubPeakRSSBytes is the restarted hub's peak resident memory during the storm;
	// HubCPUSeconds its CPU until all were back.
	HubPeakRSSBytes int64   `json:"hubPeakRSSBytes"`
	HubCPUSeconds   float64 `json:"hubCPUSeconds"`
}

func (o *IdleOptions) setDefaults() error {
	if o.Binary == "" || o.Dir == "" {
		return fmt.Errorf("idle fleet: a flotilla-bench binary and a work directory are required")
	}
	if o.Agents <= 0 {
		o.Agents = 10000
	}
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if o.Down <= 0 {
		o.Down = 10 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 30 * time.Second
	}
	if o.JoinConcurrency <= 0 {
		o.JoinConcurrency = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Minute
	}
	if o.AgentsPerProcess <= 0 {
		o.AgentsPerProcess = 5000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// RunIdle connects Agents real agents (one small release each, so that each has applied
// something and then has nothing to do) and measures what they cost the hub while idle
// (watch streams open, heartbeats), then optionally restarts the hub under them.
func RunIdle(ctx context.Context, opts IdleOptions) (*IdleReport, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	raiseFileLimit()
	log := opts.Logger
	sim := Options{Binary: opts.Binary, Dir: opts.Dir, Clusters: opts.Agents, Releases: opts.Releases, Objects: 1,
		HeartbeatInterval: opts.HeartbeatInterval, PollInterval: 5 * time.Second, JoinConcurrency: opts.JoinConcurrency,
		// An idle fleet's source changes rarely: the hub polls it every minute (the default a
		// Source gets without an interval), and reads the fleet configuration at its default.
		SourceInterval: time.Minute}
	if err := sim.setDefaults(); err != nil {
		return nil, err
	}
	sim.Releases = opts.Releases // zero is meant, not a default
	rep := &IdleReport{Agents: opts.Agents, Releases: opts.Releases, Spokes: SpokesNote}
	src, err := newFleetSource(ctx, sim)
	if err != nil {
		return nil, err
	}
	commit, err := src.commit(ctx, 1)
	if err != nil {
		return nil, err
	}
	pprofAddr := ""
	if opts.HubProfile != "" {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		opts.HubArgs = append(opts.HubArgs, "--pprof-addr", pprofAddr)
	}
	hub := newHubProc(opts.Binary, filepath.Join(opts.Dir, "hub"), src.fleetDir, opts.HubArgs)
	if err := hub.start(ctx); err != nil {
		return nil, err
	}
	defer hub.kill()
	api, err := hub.client()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	fleet, err := startHosts(ctx, opts.Binary, opts.Dir, []string{hub.agentURL()}, api, sim, opts.Agents, opts.AgentsPerProcess, false)
	if err != nil {
		return nil, err
	}
	defer fleet.stop()
	if err := waitCounters(ctx, fleet, opts.Timeout, "agents joined", func(c HostCounters) bool { return c.Joined >= int64(opts.Agents) }); err != nil {
		return nil, err
	}
	rep.JoinSeconds = time.Since(start).Seconds()
	log.Info("agents joined", "agents", opts.Agents, "processes", len(fleet.cmds), "seconds", rep.JoinSeconds)
	start = time.Now()
	if opts.Releases > 0 {
		syncCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
		err = waitSynced(syncCtx, api, sim, commit)
		cancel()
	} else {
		// Nothing to apply: idle once every agent has its watch stream open.
		err = waitCounters(ctx, fleet, opts.Timeout, "agents connected", func(c HostCounters) bool { return c.Open >= int64(opts.Agents) })
	}
	if err != nil {
		return nil, fmt.Errorf("idle fleet: first sync: %w", err)
	}
	rep.SyncSeconds = time.Since(start).Seconds()
	log.Info("agents synced; settling before the idle window", "seconds", rep.SyncSeconds)
	// Let the last reports and acks, the connection storm's retries and every agent's first
	// heartbeats pass before measuring.
	if !sleep(ctx, max(2*sim.ReportInterval, opts.HeartbeatInterval)) {
		return nil, ctx.Err()
	}

	if err := procstat.ResetPeak(hub.pid()); err != nil {
		return nil, err
	}
	before, err := sampleProc(hub.pid())
	if err != nil {
		return nil, err
	}
	t0, err := fleet.counters()
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	profiled := make(chan error, 1)
	if pprofAddr != "" {
		go func() { profiled <- profileHub(ctx, pprofAddr, opts.Window, opts.HubProfile) }()
	} else {
		profiled <- nil
	}
	if !sleep(ctx, opts.Window) {
		return nil, ctx.Err()
	}
	if err := <-profiled; err != nil {
		log.Warn("hub profile not recorded", "error", err)
	}
	took := time.Since(begin)
	after, err := sampleProc(hub.pid())
	if err != nil {
		return nil, err
	}
	rss, err := procstat.Bytes(hub.pid(), procstat.Resident)
	if err != nil {
		return nil, err
	}
	t, err := fleet.counters()
	if err != nil {
		return nil, err
	}
	rep.WindowSeconds = took.Seconds()
	rep.HubCPUSeconds = (after.CPU - before.CPU).Seconds()
	rep.HubCPUPercentCore = 100 * rep.HubCPUSeconds / took.Seconds()
	rep.HubRSSBytes, rep.HubPeakRSSBytes = rss, after.Peak
	rep.BytesHubToSpokes, rep.BytesSpokesToHub, rep.Requests = t.FromHub-t0.FromHub, t.ToHub-t0.ToHub, t.Requests-t0.Requests
	rep.Connects = t.Dials - t0.Dials
	log.Info("idle window measured", "hubCPUPercent", rep.HubCPUPercentCore)
	if !opts.Restart {
		return rep, nil
	}

	if err := hub.stop(); err != nil {
		log.Warn("stop hub", "error", err)
	}
	if !sleep(ctx, opts.Down) {
		return nil, ctx.Err()
	}
	before0, err := fleet.counters()
	if err != nil {
		return nil, err
	}
	if err := hub.start(ctx); err != nil {
		return nil, fmt.Errorf("restart hub: %w", err)
	}
	restarted := time.Now()
	cpu0, err := procstat.CPU(hub.pid())
	if err != nil {
		return nil, err
	}
	rr := &RestartReport{DownSeconds: opts.Down.Seconds()}
	perSecond := map[int]int64{}
	last := before0.Dials
	err = waitCounters(ctx, fleet, opts.Timeout, "agents connected again after the restart", func(c HostCounters) bool {
		perSecond[int(time.Since(restarted).Seconds())] += c.Dials - last
		last = c.Dials
		return c.Open >= int64(opts.Agents)
	})
	if err != nil {
		return nil, err
	}
	rr.AllBackSeconds = time.Since(restarted).Seconds()
	for _, v := range perSecond {
		rr.PeakConnectsPerSecond = max(rr.PeakConnectsPerSecond, v)
	}
	s, err := sampleProc(hub.pid())
	if err != nil {
		return nil, err
	}
	rr.HubPeakRSSBytes, rr.HubCPUSeconds = s.Peak, (s.CPU - cpu0).Seconds()
	rep.Restart = rr
	return rep, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// WriteJSON writes the report as indented JSON.
func (r *IdleReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people.
func (r *IdleReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Idle fleet: %d connected agents (watch stream + heartbeats each)\n%s\n\n", r.Agents, r.Spokes)
	fmt.Fprintf(w, "joined in %.1fs, first sync in %.1fs\n", r.JoinSeconds, r.SyncSeconds)
	fmt.Fprintf(w, "idle window %.0fs: hub CPU %.2fs = %.2f%% of one core; hub RSS %.0f MiB (peak %.0f MiB); %s to agents, %s from agents, %d requests, %d new connections\n",
		r.WindowSeconds, r.HubCPUSeconds, r.HubCPUPercentCore, float64(r.HubRSSBytes)/(1<<20), float64(r.HubPeakRSSBytes)/(1<<20),
		humanBytes(r.BytesHubToSpokes), humanBytes(r.BytesSpokesToHub), r.Requests, r.Connects)
	if x := r.Restart; x != nil {
		_, err := fmt.Fprintf(w, "hub restart (down %.0fs): all %d agents back %.1fs after the start, at most %d connections in one second; restarted hub peak RSS %.0f MiB, CPU %.1fs until all were back\n",
			x.DownSeconds, r.Agents, x.AllBackSeconds, x.PeakConnectsPerSecond, float64(x.HubPeakRSSBytes)/(1<<20), x.HubCPUSeconds)
		return err
	}
	return nil
}

// waitCounters polls the hosts' summed counters every 100ms until cond holds.
func waitCounters(ctx context.Context, f *hostedFleet, timeout time.Duration, what string, cond func(HostCounters) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := f.counters()
		if err != nil {
			return err
		}
		if cond(c) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("agent hosts: %s: not within %s (%d joined, %d connected)", what, timeout, c.Joined, c.Open)
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}
