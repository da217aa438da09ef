package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/procstat"
)

// Run simulates a fleet: it generates the fleet configuration and a Git source, starts the
// hub process, joins one real agent per simulated cluster, and measures two waves (the first
// sync, then a commit changing every object of every release); with Push it then runs the
// push baseline over the same commits and compares.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if opts.Helm {
		return runHelm(ctx, opts)
	}
	raiseFileLimit()
	log := opts.Logger
	rep := &Report{Spokes: SpokesNote, Shape: Shape{
		Clusters: opts.Clusters, Releases: opts.Releases, ObjectsPerRelease: opts.Objects, ObjectSize: opts.ObjectSize,
		Payload: opts.Payload, Layout: opts.Layout, ReportIntervalSeconds: opts.ReportInterval.Seconds(),
		Assignments: opts.Clusters * opts.Releases, Objects: int64(opts.Clusters) * int64(opts.Releases) * int64(opts.Objects),
	}}
	src, err := newFleetSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	commits := make([]string, 2)
	if commits[0], err = src.commit(ctx, 1); err != nil {
		return nil, err
	}

	// The fleet configuration does not change during a run (but for the webhook mode's source
	// interval); re-reading it often only makes the hub notice it sooner.
	// Every simulated agent joins from 127.0.0.1: the per-address join limit (meant for one
	// address per cluster) would otherwise hold all but the first burst back.
	joins := strconv.Itoa(max(opts.Clusters, 20))
	hubArgs := append([]string{"--fleet-interval", "2s", "--join-qps", joins, "--join-burst", joins}, opts.HubArgs...)
	hookSecret := ""
	if opts.Webhook {
		var flag []string
		if flag, hookSecret, err = webhookSetup(opts.Dir); err != nil {
			return nil, err
		}
		hubArgs = append(hubArgs, flag...)
	}
	pprofAddr := ""
	if opts.HubProfile != "" {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		hubArgs = append(hubArgs, "--pprof-addr", pprofAddr)
	}
	hub := newHubProc(opts.Binary, filepath.Join(opts.Dir, "hub"), src.fleetDir, hubArgs)
	if err := hub.start(ctx); err != nil {
		return nil, err
	}
	defer hub.kill()
	api, err := hub.client()
	if err != nil {
		return nil, err
	}
	log.Info("hub started; registering and joining clusters", "clusters", opts.Clusters, "agent", hub.agentURL())
	started := time.Now()
	fleet, err := joinFleet(ctx, opts, hub.agentURL(), api, filepath.Join(opts.Dir, "agents"), opts.Clusters)
	if err != nil {
		return nil, err
	}
	log.Info("clusters joined", "seconds", time.Since(started).Seconds())
	agentCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	probe := waveProbe{pid: hub.pid(), meter: &fleet.meter, clusters: fleet.clusters}
	synced := func(commit string) func(context.Context) error {
		return func(ctx context.Context) error { return waitSynced(ctx, api, opts, commit) }
	}
	profiled := make(chan error, 1)
	w, err := probe.measure(ctx, "wave 1", commits[0], opts.Timeout, func() error {
		if pprofAddr != "" {
			go func() { profiled <- profileHub(ctx, pprofAddr, opts.HubProfileFor, opts.HubProfile) }()
		} else {
			profiled <- nil
		}
		fleet.run(agentCtx)
		return nil
	}, synced(commits[0]))
	if err != nil {
		return nil, fmt.Errorf("pull wave 1: %w", err)
	}
	rep.Pull = append(rep.Pull, w)
	log.Info("pull wave 1 converged", "seconds", w.ConvergedSeconds)
	if err := fleet.recordDesired(ctx, api); err != nil {
		return nil, err
	}
	if err := <-profiled; err != nil {
		log.Warn("hub profile not recorded", "error", err)
	}
	w, err = probe.measure(ctx, "wave 2", "", opts.Timeout, func() error {
		c, err := src.commit(ctx, 2)
		commits[1] = c
		return err
	}, func(ctx context.Context) error { return waitSynced(ctx, api, opts, commits[1]) })
	if err != nil {
		return nil, fmt.Errorf("pull wave 2: %w", err)
	}
	w.Commit = commits[1]
	rep.Pull = append(rep.Pull, w)
	log.Info("pull wave 2 converged", "seconds", w.ConvergedSeconds)
	if err := fleet.recordDesired(ctx, api); err != nil {
		return nil, err
	}
	if opts.Webhook {
		if rep.Webhook, err = runWebhookWave(ctx, opts, src, hub, api, fleet.clusters, 3, hookSecret); err != nil {
			return nil, err
		}
	}
	if err := fleet.recordDesired(ctx, api); err != nil {
		return nil, err
	}
	stopAgents()
	fleet.wait()
	if fleet.downloads != nil {
		rep.Downloads = fleet.downloads.report(fleet.names)
	}
	if err := hub.stop(); err != nil {
		log.Warn("stop hub", "error", err)
	}
	if !opts.Push {
		return rep, nil
	}

	push, err := runPush(ctx, opts, src, commits)
	if err != nil {
		return nil, fmt.Errorf("push baseline: %w", err)
	}
	rep.Push = push.waves
	rep.computeRatios()
	a := &Agreement{Clusters: opts.Clusters}
	for i, mc := range fleet.clusters {
		if mc.Objects() > 0 && mc.Digest() == push.clusters[i].Digest() {
			a.Matching++
		}
	}
	a.Agree = a.Matching == a.Clusters
	rep.Agreement = a
	return rep, nil
}

// waveProbe measures a wave from the outside: the hub process's CPU and peak memory, the
// traffic at the spokes, and the writes at the simulated clusters.
type waveProbe struct {
	pid      int
	meter    *meter
	clusters []*MemCluster
}

func (p waveProbe) measure(ctx context.Context, name, commit string, timeout time.Duration, start func() error, done func(context.Context) error) (Wave, error) {
	if err := procstat.ResetPeak(p.pid); err != nil {
		return Wave{}, fmt.Errorf("reset the hub's peak memory: %w", err)
	}
	before, err := sampleProc(p.pid)
	if err != nil {
		return Wave{}, err
	}
	t0, c0 := p.meter.snapshot(), sumCounts(p.clusters)
	self0, err := procstat.CPU(os.Getpid())
	if err != nil {
		return Wave{}, err
	}
	begin := time.Now()
	if err := start(); err != nil {
		return Wave{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := done(ctx); err != nil {
		return Wave{}, err
	}
	took := time.Since(begin)
	after, err := sampleProc(p.pid)
	if err != nil {
		return Wave{}, err
	}
	self, err := procstat.CPU(os.Getpid())
	if err != nil {
		return Wave{}, err
	}
	t, c := p.meter.snapshot().sub(t0), sumCounts(p.clusters).sub(c0)
	return Wave{
		Name: name, Commit: commit, ConvergedSeconds: took.Seconds(),
		HubCPUSeconds: (after.CPU - before.CPU).Seconds(), HubPeakRSSBytes: after.Peak,
		SpokesCPUSeconds: (self - self0).Seconds(),
		BytesHubToSpokes: t.FromHub, BytesSpokesToHub: t.ToHub, Requests: t.Requests,
		RequestsPerSecond: float64(t.Requests) / took.Seconds(),
		ObjectsWritten:    c.Writes, ObjectsUnchanged: c.Unchanged,
		LoadAverage: loadAverage(),
	}, nil
}

// waitSynced polls the hub's status API until every assignment of every cluster shows the
// commit applied and Ready: the moment the hub, not the simulator, says the fleet is synced.
func waitSynced(ctx context.Context, api *hubclient.Client, opts Options, commit string) error {
	want := opts.Clusters * opts.Releases
	t := time.NewTicker(opts.PollInterval)
	defer t.Stop()
	last := ""
	for {
		st, err := api.Status(ctx)
		if err == nil && st.Fleet.Error != "" {
			// The hub keeps the last valid configuration; the generated one never became it.
			return fmt.Errorf("the hub rejected the generated fleet configuration: %s", st.Fleet.Error)
		}
		if err == nil {
			p := syncProgressOf(st, commit)
			failed := ""
			if p.failed != "" {
				// Agents retry failures (a busy hub, a transient error), so a failure only
				// ends the wait when the wave times out; it is kept to say why.
				failed = "; e.g. " + p.failed
			}
			last = fmt.Sprintf("%d of %d assignments synced at %s%s", p.done, want, commit, failed)
			if p.done == want && len(st.Assignments) == want {
				return nil
			}
		} else if last == "" || ctx.Err() == nil {
			last = err.Error() // keep the last progress when the deadline cut the read
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not synced in time: %s", last)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// syncProgress is how far the fleet is at a commit, by the hub's status API.
type syncProgress struct {
	// done is the assignments Ready with the commit applied; failedCount those in phase
	// Failed, and failed one of them, to say why.
	done, failedCount int
	failed            string
	// notSynced is the clusters with an assignment not (yet) Ready at the commit.
	notSynced map[string]bool
}

func syncProgressOf(st hubclient.StatusView, commit string) syncProgress {
	p := syncProgress{notSynced: map[string]bool{}}
	for _, a := range st.Assignments {
		if a.Phase == hubclient.PhaseReady && a.AppliedRevision == a.DesiredRevision && strings.Contains(a.DesiredRevision, commit) {
			p.done++
		} else {
			p.notSynced[a.Cluster] = true
		}
		if a.Phase == hubclient.PhaseFailed {
			p.failedCount++
			p.failed = fmt.Sprintf("release %s on cluster %s failed: %s", a.Release, a.Cluster, a.Error)
		}
	}
	return p
}

// raiseFileLimit lifts the open-file limit as far as the process may: every simulated agent
// holds a connection and its state file open.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	want := uint64(1 << 17)
	if lim.Max < want {
		// Raising the hard limit needs CAP_SYS_RESOURCE; without it, stay at the hard limit.
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want}); err == nil {
			return
		}
		want = lim.Max
	}
	lim.Cur = want
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// loadAverage is the machine's one-minute load average (0 if unknown): on a shared machine
// it says how much others competed for the cores during a wave.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscanf(string(data), "%f", &l)
	return l
}
