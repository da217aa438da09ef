package agent

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// The agent's HTTP/2 PINGs on its connection to the hub: a connection from which nothing
// arrived for pingInterval gets a PING, and one that does not answer within pingTimeout is
// closed, which ends the watch stream and makes the agent reconnect. pingInterval is shorter
// than the hub's (45s by default), so a live connection never needs the hub's PINGs, and its
// PINGs are what tell the hub that an idle agent is still there.
const (
	defaultPingInterval = 30 * time.Second
	defaultPingTimeout  = 15 * time.Second
)

// hubHTTP2 is the HTTP/2 configuration of the agent's transport to the hub.
func hubHTTP2(interval, timeout time.Duration) *http.HTTP2Config {
	return &http.HTTP2Config{SendPingTimeout: interval, PingTimeout: timeout}
}

// beat is what a heartbeat tells the hub, as far as deciding whether to send one goes.
type beat struct {
	outbox         int32
	version        string
	age            string
	refused        int64
	refusedReason  string
	projectAges    string // the project recipients, "p=age1...," in order
	hasHeartbeated bool   // a heartbeat was sent or carried by a watch request
}

func beatOf(r *agentv1.HeartbeatRequest) beat {
	return beat{outbox: r.GetOutboxDepth(), version: r.GetAgentVersion(), age: r.GetAgeRecipient(),
		refused: r.GetRefusedGeneration(), refusedReason: r.GetRefusedReason(), projectAges: projectAgesOf(r), hasHeartbeated: true}
}

func projectAgesOf(r *agentv1.HeartbeatRequest) string {
	var b strings.Builder
	for _, p := range r.GetProjectAgeRecipients() {
		b.WriteString(p.GetProject() + "=" + p.GetRecipient() + ",")
	}
	return b.String()
}

// liveness is what the hub has heard from the agent, for the heartbeat loop to decide when to
// send one. While a watch stream is open with a hub that counts it as hearing from the agent
// (it says so with stream_liveness), a heartbeat goes out only when what it carries changed,
// and at least every refresh (jittered, so that a fleet started together does not beat
// together); otherwise every interval after the hub last heard from the agent, as with hubs
// that predate stream liveness.
type liveness struct {
	interval, refresh time.Duration

	mu sync.Mutex
	// live: such a stream is open. ended: when the last one ended.
	live  bool
	ended time.Time
	// sent is what the hub was last told, at sentAt, by a heartbeat or a watch request;
	// refreshAt is when a live agent beats again anyway. tried is the last attempt, failed
	// or not.
	sent      beat
	sentAt    time.Time
	refreshAt time.Time
	tried     time.Time
	// wake tells the heartbeat loop that the stream opened or ended.
	wake chan struct{}
}

func newLiveness(interval, refresh time.Duration) *liveness {
	return &liveness{interval: interval, refresh: refresh, wake: make(chan struct{}, 1)}
}

// opened records that a live stream opened at now with the watch request carrying b.
func (l *liveness) opened(b beat, now time.Time) {
	l.mu.Lock()
	l.live = true
	l.sentLocked(b, now)
	l.mu.Unlock()
	l.notify()
}

// closed records that the stream, live or not, ended at now.
func (l *liveness) closed(now time.Time) {
	l.mu.Lock()
	was := l.live
	if was {
		l.live, l.ended = false, now
	}
	l.mu.Unlock()
	if was {
		l.notify()
	}
}

func (l *liveness) notify() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// delivered records that a heartbeat carrying b reached the hub at now.
func (l *liveness) delivered(b beat, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sentLocked(b, now)
}

func (l *liveness) sentLocked(b beat, now time.Time) {
	l.sent, l.sentAt, l.tried = b, now, now
	l.refreshAt = now.Add(l.refresh - time.Duration(rand.Int64N(int64(l.refresh/4)+1)))
}

// attempted records a heartbeat that failed at now: the next waits an interval.
func (l *liveness) attempted(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tried = now
}

// due says whether a heartbeat carrying b should go out at now, and if not, how long until
// the loop should look again. urgent: something a heartbeat carries changed and the agent
// asked for one at once (heartbeatNow). News (a refusal or its end, a new age recipient or
// version) then goes out at once; a changed outbox depth an interval after the last heartbeat,
// so that a busy agent beats no more often than with an older hub. A failed heartbeat is
// tried again an interval later.
func (l *liveness) due(b beat, now time.Time, urgent bool) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	news := b.refused != l.sent.refused || b.refusedReason != l.sent.refusedReason || b.age != l.sent.age ||
		b.version != l.sent.version || !l.sent.hasHeartbeated
	if news && urgent {
		return true, 0
	}
	var at time.Time
	switch {
	case !l.live:
		at = latest(l.tried, l.ended).Add(l.interval)
	case news:
		at = now
	case b != l.sent:
		at = l.sentAt.Add(l.interval)
	default:
		at = l.refreshAt
	}
	if l.tried.After(l.sentAt) {
		at = latest(at, l.tried.Add(l.interval))
	}
	if !now.Before(at) {
		return true, 0
	}
	wait := at.Sub(now)
	if l.live {
		wait = min(wait, l.interval) // the outbox depth may change meanwhile
	}
	return false, wait
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
