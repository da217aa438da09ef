// Package faultproxy is a TCP proxy on loopback for tests and benchmarks: it counts the bytes
// that cross it in each direction, and can cut, delay or black-hole connections to reproduce
// network faults between agents and the hub.
package faultproxy

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection accepted on its address to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	// Upstream counts bytes client -> target, Downstream target -> client.
	upstream, downstream atomic.Int64
	accepted             atomic.Int64

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	blackhole bool
	refuse    bool
	delay     time.Duration
	closed    bool
	wg        sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Bytes returns the bytes forwarded so far: client to target, and target to client.
func (p *Proxy) Bytes() (up, down int64) { return p.upstream.Load(), p.downstream.Load() }

// Accepted is the number of connections accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Active is the number of client connections being forwarded now.
func (p *Proxy) Active() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2 // each forwarded connection tracks its client and server side
}

// Cut closes every open connection (both sides see a reset or EOF).
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Refuse makes the proxy close new connections at once (a partition that answers), until
// Refuse(false).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Blackhole makes the proxy stop forwarding bytes in both directions on every connection,
// without closing anything (a partition that does not answer), until Blackhole(false).
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// Delay adds d before forwarding each chunk of data.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Close stops listening, cuts every connection and waits for the forwarding goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			c.Close()
			continue
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	server, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	defer p.track(client, false)
	defer p.track(server, false)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, &p.upstream); done <- struct{}{} }()
	go func() { p.pipe(client, server, &p.downstream); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

// pipe copies src to dst, counting, honouring delay and black-hole.
func (p *Proxy) pipe(dst, src net.Conn, counter *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for {
				p.mu.Lock()
				hole, delay := p.blackhole, p.delay
				p.mu.Unlock()
				if !hole {
					if delay > 0 {
						time.Sleep(delay)
					}
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Counted before the write: the peer's answer can arrive, and be counted the other
			// way, before this goroutine runs again, and a reader must never see the answer
			// without the request that caused it.
			counter.Add(int64(n))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a cut: the caller closes both sides
		}
	}
}
