package reconcile

import (
	"context"
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// requestCounter counts the API requests of one reconcile, so its result can say what it cost
// and tests can check that unchanged input writes nothing. Reconciles of different assignments
// share a client; each counts its own requests through the request context.
type requestCounter struct {
	total, reads, dryRuns, writes atomic.Int64
}

type counterKey struct{}

func withCounter(ctx context.Context, c *requestCounter) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

func (c *requestCounter) count(req *http.Request) {
	c.total.Add(1)
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		c.reads.Add(1)
	case req.URL.Query().Get("dryRun") != "":
		c.dryRuns.Add(1)
	default:
		c.writes.Add(1)
	}
}

func (c *requestCounter) snapshot() Requests {
	return Requests{Total: c.total.Load(), Reads: c.reads.Load(), DryRuns: c.dryRuns.Load(), Writes: c.writes.Load()}
}

// countingTransport counts each request in the counter its context carries, if any.
type countingTransport struct{ next http.RoundTripper }

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c, ok := req.Context().Value(counterKey{}).(*requestCounter); ok {
		c.count(req)
	}
	return t.next.RoundTrip(req)
}

// counted returns a copy of cfg whose requests are counted per reconcile.
func counted(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt} })
	return cfg
}
