package agent

import (
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
)

// hubFailover sends every request to the current one of several agent endpoints of the same
// hub (its replicas, sharing one store) and moves to the next when a request cannot reach it:
// the agent's usual retry, after its backoff, then goes to another replica. The endpoints
// share the hub's CA, so the identity and TLS settings are the same for all.
type hubFailover struct {
	next http.RoundTripper
	hubs []*url.URL
	cur  atomic.Uint64
}

func newHubFailover(next http.RoundTripper, hubURLs []string) (*hubFailover, error) {
	f := &hubFailover{next: next}
	for _, s := range hubURLs {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("hub URL %q: want https://HOST:PORT", s)
		}
		f.hubs = append(f.hubs, u)
	}
	return f, nil
}

func (f *hubFailover) RoundTrip(req *http.Request) (*http.Response, error) {
	i := f.cur.Load()
	hub := f.hubs[i%uint64(len(f.hubs))]
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = hub.Scheme, hub.Host, ""
	resp, err := f.next.RoundTrip(r)
	if err != nil && req.Context().Err() == nil {
		// Only the first of concurrent failures moves on, so that one outage skips one hub.
		f.cur.CompareAndSwap(i, i+1)
	}
	return resp, err
}
