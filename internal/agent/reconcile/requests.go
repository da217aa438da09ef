package reconcile

import (
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// requestCounter counts the API requests that pass through a client's transport, so a result
// can say what a reconcile cost and tests can check that unchanged input writes nothing.
type requestCounter struct {
	next                          http.RoundTripper
	total, reads, dryRuns, writes atomic.Int64
}

func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.total.Add(1)
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		c.reads.Add(1)
	case req.URL.Query().Get("dryRun") != "":
		c.dryRuns.Add(1)
	default:
		c.writes.Add(1)
	}
	return c.next.RoundTrip(req)
}

func (c *requestCounter) snapshot() Requests {
	return Requests{Total: c.total.Load(), Reads: c.reads.Load(), DryRuns: c.dryRuns.Load(), Writes: c.writes.Load()}
}

func (r Requests) minus(o Requests) Requests {
	return Requests{Total: r.Total - o.Total, Reads: r.Reads - o.Reads, DryRuns: r.DryRuns - o.DryRuns, Writes: r.Writes - o.Writes}
}

// counted returns a copy of cfg whose requests c counts.
func counted(cfg *rest.Config, c *requestCounter) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		c.next = rt
		return c
	})
	return cfg
}
