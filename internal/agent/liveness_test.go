package agent

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

func TestLivenessDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const interval, refresh = 30 * time.Second, 10 * time.Minute
	idle := beat{version: "v1", age: "age1x", hasHeartbeated: true}
	busy := idle
	busy.outbox = 7
	refusing := idle
	refusing.refused, refusing.refusedReason = 3, "drops web"
	tests := []struct {
		name   string
		setup  func(l *liveness)
		b      beat
		at     time.Duration // after t0
		urgent bool
		send   bool
		wait   time.Duration // when not sent
	}{
		{name: "first heartbeat, no stream", setup: func(*liveness) {}, b: idle, send: true},
		{name: "no stream: every interval", setup: func(l *liveness) { l.delivered(idle, t0) }, b: idle, at: interval, send: true},
		{name: "no stream: not before the interval", setup: func(l *liveness) { l.delivered(idle, t0) }, b: idle, at: 10 * time.Second, wait: 20 * time.Second},
		{name: "no stream: a refusal at once", setup: func(l *liveness) { l.delivered(idle, t0) }, b: refusing, at: time.Second, urgent: true, send: true},
		{name: "stream ended: an interval after it", setup: func(l *liveness) {
			l.opened(idle, t0)
			l.closed(t0.Add(5 * time.Minute))
		}, b: idle, at: 5*time.Minute + 10*time.Second, wait: 20 * time.Second},
		{name: "live: nothing changed, nothing sent", setup: func(l *liveness) { l.opened(idle, t0) }, b: idle, at: 5 * time.Minute, wait: interval},
		{name: "live: refreshed within the refresh", setup: func(l *liveness) { l.opened(idle, t0) }, b: idle, at: refresh, send: true},
		{name: "live: a refusal at once", setup: func(l *liveness) { l.opened(idle, t0) }, b: refusing, at: time.Second, urgent: true, send: true},
		{name: "live: its end at once", setup: func(l *liveness) { l.opened(refusing, t0) }, b: idle, at: time.Second, urgent: true, send: true},
		{name: "live: a changed outbox an interval after the last", setup: func(l *liveness) { l.opened(idle, t0) }, b: busy, at: interval, send: true},
		{name: "live: a changed outbox not sooner", setup: func(l *liveness) { l.opened(idle, t0) }, b: busy, at: 10 * time.Second, wait: 20 * time.Second},
		{name: "live: a failed heartbeat is tried an interval later", setup: func(l *liveness) {
			l.opened(idle, t0)
			l.attempted(t0.Add(time.Minute))
		}, b: busy, at: time.Minute + time.Second, wait: interval - time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLiveness(interval, refresh)
			tt.setup(l)
			send, wait := l.due(tt.b, t0.Add(tt.at), tt.urgent)
			if send != tt.send || (!send && wait != tt.wait) {
				t.Errorf("due = %v, wait %v; want %v, wait %v", send, wait, tt.send, tt.wait)
			}
		})
	}
}

// livenessHub is the fake hub as a hub that counts an open watch stream as hearing from the
// agent: the first message of each stream says so. It records the heartbeat each watch
// request carries, and ends the open streams on demand.
type livenessHub struct {
	*fakeHub
	srv *httptest.Server

	mu       sync.Mutex
	carried  []*agentv1.HeartbeatRequest
	watching int
	end      chan struct{}
}

func newLivenessHub(t *testing.T) *livenessHub {
	h := &livenessHub{fakeHub: newFakeHub(t), end: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle(agentv1connect.NewAgentServiceHandler(h))
	cert, err := h.ca.ServingCertificate([]string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewUnstartedServer(mux)
	h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	h.srv.EnableHTTP2 = true
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

func (h *livenessHub) Watch(ctx context.Context, req *connect.Request[agentv1.WatchRequest], stream *connect.ServerStream[agentv1.WatchResponse]) error {
	h.mu.Lock()
	h.carried = append(h.carried, proto.Clone(req.Msg.GetHeartbeat()).(*agentv1.HeartbeatRequest))
	h.watching++
	end := h.end
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.watching--
		h.mu.Unlock()
	}()
	if err := stream.Send(&agentv1.WatchResponse{StreamLiveness: true}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-end:
	}
	return nil
}

// endStreams ends every open watch stream, as a hub restart would.
func (h *livenessHub) endStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.end)
	h.end = make(chan struct{})
}

func (h *livenessHub) counts() (beats, watches int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fakeHub.mu.Lock()
	defer h.fakeHub.mu.Unlock()
	return len(h.heartbeats), len(h.carried)
}

// An agent whose hub counts its open watch stream as hearing from it sends no heartbeat while
// nothing changes, but for one every ten minutes; a refusal reaches the hub at once, a changed
// outbox depth within an interval, and a reconnect carries the heartbeat in its watch request.
func TestLiveStreamHeartbeatsOnlyNews(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	hub := newLivenessHub(t)
	dir := filepath.Join(t.TempDir(), "state")
	hub.identity(dir, "edge-live")
	a, err := New(t.Context(), Options{StateDir: dir, Target: &recordingTarget{}, Clock: clk, HubURL: hub.srv.URL, Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.setDesired(desired.State{Generation: 1, ExplicitRemovals: true, Document: desired.Document{Assignments: []desired.Assignment{{Release: "baseline"}}}})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){a.watchLoop, a.heartbeatLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	live := func() bool {
		a.live.mu.Lock()
		defer a.live.mu.Unlock()
		return a.live.live
	}
	// settled: the stream is open and counted, and the heartbeat loop waits on its timer (the
	// only timer: the watch loop waits on its stream).
	settled := func(what string) {
		t.Helper()
		eventually.Within(t, 10*time.Second, hub.fakeHub.holds(what, func() bool { return live() && clk.Waiters() == 1 }))
	}
	settled("the stream counted as hearing from the agent")
	beats0, watches := hub.counts()
	if watches != 1 || beats0 > 1 {
		t.Fatalf("%d watch requests and %d heartbeats at the start; want 1 and at most 1 (sent before the stream was counted)", watches, beats0)
	}
	if hb := hub.carried[0]; hb.GetAgentVersion() != "v1" || hb.GetGeneration() != 1 || hb.GetAgeRecipient() == "" {
		t.Errorf("watch request carried heartbeat %v; want version v1, generation 1 and the age recipient", hb)
	}

	// Seven minutes of nothing: no heartbeat (the refresh is due after 7.5 to 10 minutes).
	for range 14 {
		clk.Advance(30 * time.Second)
		settled("an idle interval")
	}
	if beats, _ := hub.counts(); beats != beats0 {
		t.Fatalf("%d heartbeats in seven idle minutes with the stream open; want none", beats-beats0)
	}

	// A refusal goes out at once, without the clock moving.
	a.offer(&agentv1.DesiredState{Generation: 2, ExplicitRemovals: true})
	eventually.Within(t, 10*time.Second, hub.fakeHub.holds("the refusal", func() bool { b, _ := hub.counts(); return b == beats0+1 }))
	if hb := hub.lastHeartbeat(); hb.RefusedGeneration != 2 || hb.Generation != 1 {
		t.Errorf("heartbeat %v; want generation 1 kept, 2 refused", hb)
	}
	settled("after the refusal")

	// A changed outbox depth goes out within an interval.
	if err := a.st.enqueue(&agentv1.Report{Statuses: []*agentv1.AssignmentStatus{{Release: "baseline", Phase: "Ready"}}}, 100); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	eventually.Within(t, 10*time.Second, hub.fakeHub.holds("the outbox depth", func() bool { b, _ := hub.counts(); return b == beats0+2 }))
	if hb := hub.lastHeartbeat(); hb.OutboxDepth != 1 {
		t.Errorf("heartbeat %v; want outbox depth 1", hb)
	}
	settled("after the outbox depth")

	// Unchanged for ten minutes: one refresh.
	for range 20 {
		clk.Advance(30 * time.Second)
		settled("an idle interval")
	}
	if beats, _ := hub.counts(); beats != beats0+3 {
		t.Errorf("%d heartbeats in ten unchanged minutes; want the one refresh", beats-beats0-2)
	}

	// The hub ends the stream (a restart): the agent reconnects and its watch request carries
	// what a heartbeat would, so no heartbeat follows.
	beats1, _ := hub.counts()
	hub.endStreams()
	// The watch loop waits out its first backoff (at most half a second) on the fake clock,
	// beside the heartbeat loop's timer.
	eventually.Within(t, 10*time.Second, hub.fakeHub.holds("the stream's end", func() bool { return !live() && clk.Waiters() == 2 }))
	clk.Advance(time.Second)
	settled("the stream open again")
	beats, watches := hub.counts()
	if watches != 2 || beats != beats1 {
		t.Errorf("after a reconnect: %d watch requests and %d more heartbeats; want 2 and none", watches, beats-beats1)
	}
	if hb := hub.carried[1]; hb.GetOutboxDepth() != 1 || hb.GetRefusedGeneration() != 2 {
		t.Errorf("the reconnect carried heartbeat %v; want outbox depth 1 and the refusal of 2", hb)
	}
}

// With a hub older than stream liveness (no stream_liveness), the agent heartbeats every
// interval with its watch stream open, as before.
func TestOlderHubGetsHeartbeatsEveryInterval(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	a, hub := newClockAgent(t, &recordingTarget{}, clk)
	a.setDesired(desired.State{Generation: 1, ExplicitRemovals: true})
	hub.publish(&agentv1.DesiredState{Generation: 1, ExplicitRemovals: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){a.watchLoop, a.heartbeatLoop} {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	beats := func() int {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.heartbeats)
	}
	eventually.Within(t, 10*time.Second, hub.holds("first heartbeat", func() bool { return beats() == 1 && clk.Waiters() == 1 }))
	for i := 2; i <= 4; i++ {
		clk.Advance(a.opts.HeartbeatInterval)
		eventually.Within(t, 10*time.Second, hub.holds("a heartbeat every interval", func() bool { return beats() == i && clk.Waiters() == 1 }))
	}
}

// TestAgentClosesSilentConnectionByPing: when the connection to the hub stops carrying
// anything (a partition that does not answer), the agent's HTTP/2 PING goes unanswered and it
// closes the connection and reconnects once the hub can be reached. The fake hub sends no
// PINGs; the agent's are short, so the test waits a few real seconds at most: net/http's PING
// timers have no clock to inject.
func TestAgentClosesSilentConnectionByPing(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	proxy, err := faultproxy.Start(strings.TrimPrefix(hub.srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	defer proxy.Blackhole(false) // a black-holed proxy's copies never end
	dir := filepath.Join(t.TempDir(), "state")
	hub.identity(dir, "edge-ping")
	var closed atomic.Int64 // connections the agent closed
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &closeCounter{Conn: c, n: &closed}, nil
	}
	a, err := New(t.Context(), Options{StateDir: dir, Target: &recordingTarget{}, HubURL: "https://" + proxy.Addr(), DialContext: dial,
		PingInterval: 300 * time.Millisecond, PingTimeout: 300 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	hub.publish(&agentv1.DesiredState{Generation: 1, ExplicitRemovals: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.watchLoop(ctx) }()
	defer func() { cancel(); <-done }()
	eventually.Within(t, 30*time.Second, hub.holds("the watch stream", func() bool { return generationOf(a.currentDesired()) == 1 && proxy.Active() == 1 }))

	proxy.Blackhole(true)
	eventually.Within(t, 30*time.Second, hub.holds("the agent closing the silent connection", func() bool { return closed.Load() >= 1 }))
	proxy.Blackhole(false)
	eventually.Within(t, 30*time.Second, hub.holds("a new connection", func() bool { return proxy.Accepted() >= 2 && proxy.Active() == 1 }))
}

// closeCounter counts the connection's closes.
type closeCounter struct {
	net.Conn
	n    *atomic.Int64
	once sync.Once
}

func (c *closeCounter) Close() error {
	c.once.Do(func() { c.n.Add(1) })
	return c.Conn.Close()
}
