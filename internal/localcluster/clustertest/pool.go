package clustertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/localcluster"
)

// Pool hands out local clusters to the tests of a package and takes them back reset, so
// that a package starts a few API servers instead of one or more per test. A test has the
// clusters it takes to itself until it ends; a cluster that a failed test used, or that
// cannot be reset, is stopped instead of handed out again. Its methods are safe for
// concurrent use by parallel tests.
//
// Tests that kill an API server or etcd, or change what a cluster started with, should start
// clusters of their own (Start, StartAll).
type Pool struct {
	prefix string
	mu     sync.Mutex
	free   []*localcluster.Cluster
	all    []*localcluster.Cluster
	seq    int
	// stats, for Close's summary.
	started, reused, discarded int
	startTime, resetTime       time.Duration
}

// NewPool returns an empty pool whose clusters are named prefix-1, prefix-2, ...
func NewPool(prefix string) *Pool { return &Pool{prefix: prefix} }

// Warm starts n clusters in parallel, so that the first tests find them ready.
func (p *Pool) Warm(ctx context.Context, n int) error {
	clusters, err := p.start(ctx, n)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.free = append(p.free, clusters...)
	p.mu.Unlock()
	return nil
}

// Take gives the test n clusters of its own, reusing free ones and starting the rest in
// parallel, and takes them back when the test ends.
func (p *Pool) Take(tb testing.TB, n int) []*localcluster.Cluster {
	tb.Helper()
	p.mu.Lock()
	k := min(n, len(p.free))
	got := append([]*localcluster.Cluster(nil), p.free[len(p.free)-k:]...)
	p.free = p.free[:len(p.free)-k]
	p.reused += k
	p.mu.Unlock()
	if k < n {
		more, err := p.start(context.Background(), n-k)
		if err != nil {
			p.giveBack(tb, got, false)
			tb.Fatalf("start local clusters: %v", err)
		}
		got = append(got, more...)
	}
	tb.Cleanup(func() { p.giveBack(tb, got, !tb.Failed()) })
	return got
}

// giveBack resets the clusters and returns them to the pool, or stops them when reuse is
// false or their reset fails.
func (p *Pool) giveBack(tb testing.TB, clusters []*localcluster.Cluster, reuse bool) {
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() {
			if reuse {
				began := time.Now()
				err := c.Ready(context.Background())
				if err == nil {
					err = c.Reset(context.Background())
				}
				if err == nil {
					p.mu.Lock()
					p.free = append(p.free, c)
					p.resetTime += time.Since(began)
					p.mu.Unlock()
					return
				}
				tb.Logf("cluster pool: %s not reused: %v", c.Name(), err)
			}
			p.mu.Lock()
			p.discarded++
			p.mu.Unlock()
			if err := c.Stop(); err != nil {
				tb.Errorf("stop local cluster %s: %v", c.Name(), err)
			}
		})
	}
	wg.Wait()
}

func (p *Pool) start(ctx context.Context, n int) ([]*localcluster.Cluster, error) {
	opts := make([]localcluster.Options, n)
	p.mu.Lock()
	for i := range opts {
		p.seq++
		opts[i].Name = fmt.Sprintf("%s-%d", p.prefix, p.seq)
	}
	p.mu.Unlock()
	began := time.Now()
	clusters, err := localcluster.StartAll(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		if err := c.MarkBaseline(ctx); err != nil {
			_ = localcluster.StopAll(clusters) // already failing: the baseline's error is returned
			return nil, err
		}
	}
	p.mu.Lock()
	p.all = append(p.all, clusters...)
	p.started += n
	p.startTime += time.Since(began)
	p.mu.Unlock()
	return clusters, nil
}

// Close stops every cluster the pool started and says how many it started (and the time
// spent waiting for starts), how many times one was reused (and the time its resets took),
// and how many were stopped early.
func (p *Pool) Close() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := localcluster.StopAll(p.all)
	p.all, p.free = nil, nil
	return fmt.Sprintf("cluster pool %s: %d clusters started (%s waiting for starts), %d taken again after a reset (%s resetting), %d stopped early",
		p.prefix, p.started, p.startTime.Round(time.Millisecond), p.reused, p.resetTime.Round(time.Millisecond), p.discarded), err
}
