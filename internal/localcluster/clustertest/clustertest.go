// Package clustertest starts local clusters for tests and stops them when the test ends, the way
// net/http/httptest does for servers.
package clustertest

import (
	"context"
	"testing"

	"github.com/flotilla/flotilla/internal/localcluster"
)

// Start starts a local cluster and registers its Stop with tb.Cleanup, so it is stopped even
// when the test fails or panics. It fails the test if the cluster cannot start; the error says
// which binary is missing and how to build it.
func Start(tb testing.TB, opts localcluster.Options) *localcluster.Cluster {
	tb.Helper()
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("start local cluster: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stop local cluster %s: %v", c.Name(), err)
		}
	})
	return c
}

// StartAll starts one cluster per name in parallel, stopped when the test ends, and returns
// them by name.
func StartAll(tb testing.TB, names ...string) map[string]*localcluster.Cluster {
	tb.Helper()
	opts := make([]localcluster.Options, len(names))
	for i, n := range names {
		opts[i].Name = n
	}
	clusters, err := localcluster.StartAll(context.Background(), opts)
	if err != nil {
		tb.Fatalf("start local clusters: %v", err)
	}
	tb.Cleanup(func() {
		if err := localcluster.StopAll(clusters); err != nil {
			tb.Errorf("stop local clusters: %v", err)
		}
	})
	out := make(map[string]*localcluster.Cluster, len(clusters))
	for _, c := range clusters {
		out[c.Name()] = c
	}
	return out
}
