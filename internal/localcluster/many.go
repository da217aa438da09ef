package localcluster

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// StartAll starts one cluster per Options in parallel. If any fails to start, the others are
// stopped and the first error is returned, so nothing is left running.
func StartAll(ctx context.Context, opts []Options) ([]*Cluster, error) {
	clusters := make([]*Cluster, len(opts))
	g, gctx := errgroup.WithContext(ctx)
	for i, o := range opts {
		g.Go(func() error {
			c, err := Start(gctx, o)
			clusters[i] = c
			return err
		})
	}
	if err := g.Wait(); err != nil {
		_ = StopAll(clusters) // already failing: the first error is the one returned
		return nil, err
	}
	return clusters, nil
}

// StopAll stops the given clusters in parallel, skipping nil entries, and returns the first
// error from removing a data directory.
func StopAll(clusters []*Cluster) error {
	var g errgroup.Group
	for _, c := range clusters {
		if c != nil {
			g.Go(c.Stop)
		}
	}
	return g.Wait()
}
