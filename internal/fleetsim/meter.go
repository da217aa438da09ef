package fleetsim

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
)

// meter counts the bytes that cross connections at the spokes' end (TLS records and all),
// in each direction, and the requests made over them.
type meter struct {
	toHub, fromHub atomic.Int64 // spoke -> hub, hub -> spoke
	requests       atomic.Int64
	// dials counts connections opened to the hub, open those not closed yet.
	dials, open atomic.Int64
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
	m.dials.Add(1)
	m.open.Add(1)
	return &countedConn{Conn: c, read: &m.fromHub, written: &m.toHub, open: &m.open}, nil
}

// wrap counts the requests a spoke makes.
func (m *meter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		m.requests.Add(1)
		return rt.RoundTrip(r)
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
	closed        atomic.Bool
}

func (c *countedConn) Close() error {
	if c.open != nil && c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}
