package fleetsim

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// meter counts the bytes that cross connections at the spokes' end (TLS records and all),
// in each direction, and the requests made over them.
type meter struct {
	toHub, fromHub atomic.Int64 // spoke -> hub, hub -> spoke
	requests       atomic.Int64
	// dials counts connections opened to the hub, open those not closed yet.
	dials, open atomic.Int64
	// refused counts responses that turned a request away (429, 503); retryAfter those of
	// them that said when to come back (a Retry-After header).
	refused, retryAfter atomic.Int64
	// refusedBy splits refused by what was asked: an RPC's path, or "/artifacts/".
	refusedBy sync.Map // string -> *atomic.Int64
	// hubs splits the counts by hub address (HOST:PORT), for a fleet spread over replicas.
	hubs sync.Map // string -> *hubMeter
}

// hubMeter is what crossed the connections to one hub address.
type hubMeter struct {
	dials, open, fromHub, requests, refused, downloads atomic.Int64
}

func (m *meter) hub(addr string) *hubMeter {
	if h, ok := m.hubs.Load(addr); ok {
		return h.(*hubMeter)
	}
	h, _ := m.hubs.LoadOrStore(addr, &hubMeter{})
	return h.(*hubMeter)
}

// HubCounters are one hub address's share of an agent host's counters.
type HubCounters struct {
	Dials     int64 `json:"dials"`
	Open      int64 `json:"open"`
	FromHub   int64 `json:"fromHub"`
	Requests  int64 `json:"requests"`
	Refused   int64 `json:"refused"`
	Downloads int64 `json:"downloads"`
}

// refusals snapshots refusedBy.
func (m *meter) refusals() map[string]int64 {
	out := map[string]int64{}
	m.refusedBy.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// perHub snapshots the per-address counts.
func (m *meter) perHub() map[string]HubCounters {
	out := map[string]HubCounters{}
	m.hubs.Range(func(k, v any) bool {
		h := v.(*hubMeter)
		out[k.(string)] = HubCounters{Dials: h.dials.Load(), Open: h.open.Load(), FromHub: h.fromHub.Load(),
			Requests: h.requests.Load(), Refused: h.refused.Load(), Downloads: h.downloads.Load()}
		return true
	})
	return out
}

// traffic is a snapshot of a meter.
type traffic struct {
	ToHub, FromHub, Requests int64
}

func (m *meter) snapshot() traffic {
	return traffic{ToHub: m.toHub.Load(), FromHub: m.fromHub.Load(), Requests: m.requests.Load()}
}

func (t traffic) sub(o traffic) traffic {
	return traffic{ToHub: t.ToHub - o.ToHub, FromHub: t.FromHub - o.FromHub, Requests: t.Requests - o.Requests}
}

// dial opens a connection from a spoke to the hub, counting what crosses it.
func (m *meter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	h := m.hub(addr)
	m.dials.Add(1)
	m.open.Add(1)
	h.dials.Add(1)
	h.open.Add(1)
	return &countedConn{Conn: c, read: &m.fromHub, written: &m.toHub, open: &m.open, hubRead: &h.fromHub, hubOpen: &h.open}, nil
}

// wrap counts the requests a spoke makes, the refusals among their responses, and the
// artifact downloads served, per hub address.
func (m *meter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := m.hub(r.URL.Host)
		m.requests.Add(1)
		h.requests.Add(1)
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			// Connect's unary calls carry resource_exhausted as a 429 too.
			m.refused.Add(1)
			h.refused.Add(1)
			what := r.URL.Path
			if strings.HasPrefix(what, "/artifacts/") {
				what = "/artifacts/"
			}
			n, _ := m.refusedBy.LoadOrStore(what, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if resp.Header.Get("Retry-After") != "" {
				m.retryAfter.Add(1)
			}
		case resp.StatusCode == http.StatusOK && strings.HasPrefix(r.URL.Path, "/artifacts/"):
			h.downloads.Add(1)
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// listener counts at a spoke's endpoint (push mode): what it reads came from the hub.
type countedListener struct {
	net.Listener
	m *meter
}

func (l countedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, read: &l.m.fromHub, written: &l.m.toHub}, nil
}

type countedConn struct {
	net.Conn
	read, written *atomic.Int64
	open          *atomic.Int64 // nil: not tracked
	// hubRead and hubOpen are the hub address's share (nil: not tracked).
	hubRead, hubOpen *atomic.Int64
	closed           atomic.Bool
}

func (c *countedConn) Close() error {
	if c.open != nil && c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
		if c.hubOpen != nil {
			c.hubOpen.Add(-1)
		}
	}
	return c.Conn.Close()
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	if c.hubRead != nil {
		c.hubRead.Add(int64(n))
	}
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}
