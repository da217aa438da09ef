package fleetsim

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// pullFleet is the simulated fleet in pull mode: one real agent per cluster, all in this
// process, each reconciling into its own MemCluster and reaching the hub over its own mTLS
// connection through a counting dialer.
type pullFleet struct {
	names    []string
	agents   []*agent.Agent
	clusters []*MemCluster
	meter    meter
	// downloads, when recorded (Options.RecordDownloads), is each cluster's artifacts.
	downloads *downloadLog
	wg        sync.WaitGroup
}

// joinFleet registers every cluster through the user API and joins its agent (a fresh key,
// a certificate from the hub), as `flotilla cluster add` and an agent's first start do.
func joinFleet(ctx context.Context, opts Options, hubURL string, api *hubclient.Client, stateDir string, n int) (*pullFleet, error) {
	f := &pullFleet{names: make([]string, n), agents: make([]*agent.Agent, n), clusters: make([]*MemCluster, n)}
	if opts.RecordDownloads {
		var err error
		if f.downloads, err = newDownloadLog(filepath.Join(opts.Dir, "downloads")); err != nil {
			return nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.JoinConcurrency)
	for i := range n {
		g.Go(func() error {
			name := clusterName(i)
			labels := simLabels
			if opts.Helm {
				labels = helmClusterLabels(i)
			}
			j, err := api.AddCluster(gctx, name, labels)
			if err != nil {
				return fmt.Errorf("cluster %s: add: %w", name, err)
			}
			mc := NewMemCluster(name)
			wrap := f.meter.wrap
			if f.downloads != nil {
				wrap = func(rt http.RoundTripper) http.RoundTripper { return f.meter.wrap(f.downloads.wrap(name, rt)) }
			}
			a, err := agent.New(gctx, agent.Options{
				HubURL: hubURL, JoinToken: j.JoinToken, Target: mc, StateDir: filepath.Join(stateDir, name),
				Version: "fleetsim", ReportInterval: opts.ReportInterval, HeartbeatInterval: opts.HeartbeatInterval,
				DialContext: f.meter.dial, WrapTransport: wrap,
			})
			if err != nil {
				return fmt.Errorf("cluster %s: agent: %w", name, err)
			}
			f.names[i], f.agents[i], f.clusters[i] = name, a, mc
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// recordDesired notes each cluster's desired artifacts, when downloads are recorded.
func (f *pullFleet) recordDesired(ctx context.Context, api *hubclient.Client) error {
	if f.downloads == nil {
		return nil
	}
	return f.downloads.recordDesired(ctx, api)
}

// run starts every agent; they work until ctx ends.
func (f *pullFleet) run(ctx context.Context) {
	for _, a := range f.agents {
		f.wg.Go(func() { _ = a.Run(ctx) })
	}
}

// wait waits for every agent to stop (after ctx of run ended) and releases their state dirs.
func (f *pullFleet) wait() {
	f.wg.Wait()
	f.close()
}

func (f *pullFleet) close() {
	for _, a := range f.agents {
		if a != nil {
			_ = a.Close() // shutting down: the state was committed as it went
		}
	}
}

// counts sums the clusters' counters.
func sumCounts(clusters []*MemCluster) Counts {
	var c Counts
	for _, mc := range clusters {
		x := mc.Counts()
		c.Writes += x.Writes
		c.Unchanged += x.Unchanged
		c.Pruned += x.Pruned
	}
	return c
}

func (c Counts) sub(o Counts) Counts {
	return Counts{Writes: c.Writes - o.Writes, Unchanged: c.Unchanged - o.Unchanged, Pruned: c.Pruned - o.Pruned}
}
