package agentapi

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flotilla/flotilla/internal/clock"
)

// queue serves at most slots requests of one kind at once (artifact downloads, joins). A
// request that finds every slot taken waits its turn rather than being refused, so that a
// cold start of thousands of agents is served in order instead of retried at random:
//
//   - Turns go round-robin across keys (the cluster for downloads, the client address for
//     joins), first come first served within a key: a cluster fetching 65 artifacts at once
//     takes one turn in each round, not the next 65.
//   - At most max requests wait; beyond that one is refused with the time the waiting ones
//     take to be served, from the measured drain rate.
//   - A request waits at most hold; then it is told when its turn is estimated to come.
//   - A request whose client went away leaves the queue at once.
//
// A waiting request costs its handler goroutine and about 200 bytes here; max bounds them.
type queue struct {
	name       string // the metrics' label: artifacts, joins
	clock      clock.Clock
	slots, max int
	hold       time.Duration

	waitingGauge prometheus.Gauge
	waited       prometheus.Observer
	full         prometheus.Counter // refused: the queue was full
	expired      prometheus.Counter // waited hold without a turn

	mu      sync.Mutex
	busy    int // slots taken
	waiting int
	keys    map[string]*keyQueue
	ring    list.List // of *keyQueue with a request waiting; the front's turn is next

	// The drain rate: the times between two requests finishing while others wait (the first
	// from when they started waiting), the last drainSamples of them.
	samples      [drainSamples]time.Duration
	nSamples     int // samples taken, ever
	sampleSum    time.Duration
	prior        time.Duration // the interval assumed until one is measured
	lastDone     time.Time
	backlogSince time.Time
}

// keyQueue is the requests of one key, in arrival order.
type keyQueue struct {
	key  string
	reqs list.List // of *queued
	elem *list.Element
}

type queued struct {
	kq      *keyQueue
	elem    *list.Element
	since   time.Time
	turn    chan struct{} // closed when the request gets a slot
	granted bool          // under queue.mu
}

// drainSamples is how many of the last intervals between two requests finishing the drain
// rate is measured over: the estimate follows a change of pace within that many requests.
const drainSamples = 32

// maxQueueRetry caps the Retry-After a queue estimates (agents cap what they honour too).
const maxQueueRetry = 5 * time.Minute

func newQueue(name string, c clock.Clock, slots, maxWaiting int, hold time.Duration, m *Metrics) *queue {
	slots = max(slots, 1)
	return &queue{
		name: name, clock: c, slots: slots, max: max(maxWaiting, 0), hold: hold,
		waitingGauge: m.QueueWaiting.WithLabelValues(name),
		waited:       m.QueueWait.WithLabelValues(name),
		full:         m.QueueTurnedAway.WithLabelValues(name, "full"),
		expired:      m.QueueTurnedAway.WithLabelValues(name, "expired"),
		keys:         map[string]*keyQueue{},
		// Until something was measured: a second per request per slot.
		prior: time.Second / time.Duration(slots),
	}
}

// turnedAway is a request the queue did not serve, and when it should come back.
type turnedAway struct {
	full    bool // the queue was full; otherwise the request waited hold
	waiting int  // requests waiting when it was turned away
	retry   time.Duration
}

// acquire takes a slot for key, waiting its turn if need be. It returns nil, nil once the
// caller holds a slot (it must call release), a turnedAway when it should come back later,
// or ctx's error when the caller went away while waiting.
func (q *queue) acquire(ctx context.Context, key string) (*turnedAway, error) {
	q.mu.Lock()
	now := q.clock.Now()
	if q.busy < q.slots { // a slot is free only when nobody waits: release hands it over
		q.busy++
		q.mu.Unlock()
		q.waited.Observe(0)
		return nil, nil
	}
	if q.waiting >= q.max {
		away := &turnedAway{full: true, waiting: q.waiting, retry: q.estimate(now, q.waiting)}
		q.mu.Unlock()
		q.full.Inc()
		return away, nil
	}
	w := q.push(key, now)
	q.mu.Unlock()

	t := q.clock.NewTimer(q.hold)
	defer t.Stop()
	select {
	case <-w.turn:
		q.waited.Observe(q.clock.Now().Sub(w.since).Seconds())
		return nil, nil
	case <-ctx.Done():
		q.mu.Lock()
		if w.granted { // the turn came as the caller left: pass it on
			q.releaseLocked(q.clock.Now())
		} else {
			q.remove(w)
		}
		q.mu.Unlock()
		return nil, ctx.Err()
	case <-t.C():
	}
	q.mu.Lock()
	if w.granted {
		q.mu.Unlock()
		q.waited.Observe(q.clock.Now().Sub(w.since).Seconds())
		return nil, nil
	}
	now = q.clock.Now()
	away := &turnedAway{waiting: q.waiting, retry: q.estimate(now, q.position(w))}
	q.remove(w)
	q.mu.Unlock()
	q.expired.Inc()
	return away, nil
}

// release gives a slot back: to the next request in turn if one waits.
func (q *queue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked(q.clock.Now())
}

func (q *queue) releaseLocked(now time.Time) {
	if q.waiting == 0 {
		q.busy--
		q.lastDone = now
		return
	}
	sample := now.Sub(latest(q.lastDone, q.backlogSince))
	i := q.nSamples % drainSamples
	q.sampleSum += sample - q.samples[i]
	q.samples[i] = sample
	q.nSamples++
	q.lastDone = now
	// The front key's first request takes the slot; the key goes to the back of the round.
	kq := q.ring.Front().Value.(*keyQueue)
	w := kq.reqs.Remove(kq.reqs.Front()).(*queued)
	q.ring.Remove(kq.elem)
	if kq.reqs.Len() > 0 {
		kq.elem = q.ring.PushBack(kq)
	} else {
		delete(q.keys, kq.key)
	}
	q.waiting--
	q.waitingGauge.Set(float64(q.waiting))
	w.granted = true
	close(w.turn)
}

// push queues a request of key.
func (q *queue) push(key string, now time.Time) *queued {
	if q.waiting == 0 {
		q.backlogSince = now
	}
	kq := q.keys[key]
	if kq == nil {
		kq = &keyQueue{key: key}
		kq.elem = q.ring.PushBack(kq)
		q.keys[key] = kq
	}
	w := &queued{kq: kq, since: now, turn: make(chan struct{})}
	w.elem = kq.reqs.PushBack(w)
	q.waiting++
	q.waitingGauge.Set(float64(q.waiting))
	return w
}

// remove takes a request that did not get its turn out of the queue.
func (q *queue) remove(w *queued) {
	kq := w.kq
	kq.reqs.Remove(w.elem)
	if kq.reqs.Len() == 0 {
		q.ring.Remove(kq.elem)
		delete(q.keys, kq.key)
	}
	q.waiting--
	q.waitingGauge.Set(float64(q.waiting))
}

// position is w's place in the order of turns (1: next). Ahead of the i-th request of its
// key (from 0) are the key's i before it and, of every other key, up to i+1 requests if the
// key's turn in the round comes before w's key, up to i if after.
func (q *queue) position(w *queued) int {
	i := 0
	for e := w.kq.reqs.Front(); e != w.elem; e = e.Next() {
		i++
	}
	ahead, before := i, true
	for e := q.ring.Front(); e != nil; e = e.Next() {
		kq := e.Value.(*keyQueue)
		if kq == w.kq {
			before = false
			continue
		}
		n := i
		if before {
			n = i + 1
		}
		ahead += min(kq.reqs.Len(), n)
	}
	return ahead + 1
}

// interval is the measured mean time between two requests finishing while others wait.
func (q *queue) interval() time.Duration {
	if q.nSamples == 0 {
		return q.prior
	}
	return q.sampleSum / time.Duration(min(q.nSamples, drainSamples))
}

// estimate is how long until the n-th request in turn gets a slot, at the measured drain
// rate; a queue that has served nothing for longer than its mean interval is assumed that
// slow. It is never more than the hold: a stall of a second multiplied by thousands waiting
// told agents to stay away for minutes while the hub sat idle (10,000 agents starting at once
// stalled at 6,000 Ready), and a request that comes back too early costs one refusal.
func (q *queue) estimate(now time.Time, n int) time.Duration {
	interval := q.interval()
	if q.waiting > 0 {
		interval = max(interval, now.Sub(latest(q.lastDone, q.backlogSince)))
	}
	return min(time.Duration(n)*interval, q.hold, maxQueueRetry)
}
