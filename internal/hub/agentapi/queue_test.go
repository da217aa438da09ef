package agentapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flotilla/flotilla/internal/clock"
)

var queueT0 = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

// served records the order in which queued requests got their slot.
type served struct {
	mu    sync.Mutex
	order []string
}

func (s *served) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = append(s.order, name)
}

func (s *served) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// wait queues a request named name for key and records it once served (or why not).
func (s *served) wait(t *testing.T, ctx context.Context, q *queue, key, name string) {
	go func() {
		away, err := q.acquire(ctx, key)
		switch {
		case err != nil:
			s.add(name + " left")
		case away != nil:
			s.add(fmt.Sprintf("%s turned away, retry %s", name, away.retry))
		default:
			s.add(name)
		}
	}()
	synctest.Wait() // queued, in this order
}

// TestQueueTurnsRoundRobinAcrossClusters: one cluster queuing many downloads takes one turn
// per round; the others do not wait behind all of them.
func TestQueueTurnsRoundRobinAcrossClusters(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewFake(queueT0)
		q := newQueue("artifacts", c, 1, 100, time.Minute, NewMetrics())
		if away, err := q.acquire(t.Context(), "busy"); away != nil || err != nil {
			t.Fatalf("first request: %v, %v; want the free slot", away, err)
		}
		var s served
		for i := range 4 {
			s.wait(t, t.Context(), q, "big", fmt.Sprintf("big-%d", i))
		}
		s.wait(t, t.Context(), q, "small-a", "small-a")
		s.wait(t, t.Context(), q, "small-b", "small-b-0")
		s.wait(t, t.Context(), q, "small-b", "small-b-1")
		for range 7 {
			q.release()
			synctest.Wait()
		}
		want := []string{"big-0", "small-a", "small-b-0", "big-1", "small-b-1", "big-2", "big-3"}
		if diff := cmp.Diff(want, s.get()); diff != "" {
			t.Errorf("order of turns (-want +got):\n%s", diff)
		}
	})
}

// TestQueuePosition is the order of turns the Retry-After estimates are made from.
func TestQueuePosition(t *testing.T) {
	t.Parallel()
	q := newQueue("artifacts", clock.NewFake(queueT0), 1, 100, time.Minute, NewMetrics())
	q.busy = 1
	reqs := map[string]*queued{}
	for _, r := range []struct{ key, name string }{
		{"a", "a0"}, {"a", "a1"}, {"a", "a2"}, {"b", "b0"}, {"c", "c0"}, {"c", "c1"},
	} {
		reqs[r.name] = q.push(r.key, queueT0)
	}
	// Turns: a0 b0 c0 a1 c1 a2.
	for name, want := range map[string]int{"a0": 1, "b0": 2, "c0": 3, "a1": 4, "c1": 5, "a2": 6} {
		if got := q.position(reqs[name]); got != want {
			t.Errorf("position of %s = %d; want %d", name, got, want)
		}
	}
	q.releaseLocked(queueT0) // a0's turn: a goes to the back of the round
	for name, want := range map[string]int{"b0": 1, "c0": 2, "a1": 3, "c1": 4, "a2": 5} {
		if got := q.position(reqs[name]); got != want {
			t.Errorf("after a0's turn, position of %s = %d; want %d", name, got, want)
		}
	}
}

// artifactLimiter is a limiter whose download queue has one slot, with room for maxWaiting.
func artifactLimiter(c clock.Clock, maxWaiting int) (*limiter, *Metrics) {
	m := NewMetrics()
	l := newLimiter(Options{MaxArtifactDownloads: 1, GlobalQPS: 1000, GlobalBurst: 1000, AgentQPS: 1000, AgentBurst: 1000}, c, slog.New(slog.DiscardHandler), m)
	l.artifacts.max = maxWaiting
	return l, m
}

// download is a GET of an artifact by cluster through l's download queue, the handler
// answering 200 at once.
func download(ctx context.Context, l *limiter, cluster string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h := l.limitArtifacts(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	req := httptest.NewRequestWithContext(context.WithValue(ctx, clusterKey{}, cluster), http.MethodGet, "/artifacts/sha256/00", nil)
	h.ServeHTTP(rec, req)
	return rec
}

// drain serves n queued requests of their own clusters, one every pace, so that the queue
// measures its drain rate; the slot is held again when it returns. The requests are queued
// without a hold of their own, which a slow pace would outlast.
func drain(c *clock.Fake, q *queue, n int, pace time.Duration) {
	q.mu.Lock()
	for i := range n {
		q.push(fmt.Sprintf("warm-%d", i), c.Now())
	}
	q.mu.Unlock()
	for range n {
		c.Advance(pace)
		q.release()
	}
}

// TestQueueFullRefusesWithMeasuredRetryAfter: beyond its bound the queue refuses at once,
// with a Retry-After from the measured drain rate (here 2 requests waiting, served every 3 s:
// 6 s, plus up to a quarter of spread), and says why.
func TestQueueFullRefusesWithMeasuredRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		pace          time.Duration
		minSecs, most int
	}{
		{"served every 3s", 3 * time.Second, 6, 8},
		{"served every 20ms", 20 * time.Millisecond, 1, 2},
		// Two waiting at 2 min each would be 4 min: never more than the minute's hold.
		{"served every 2m", 2 * time.Minute, 60, 75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				c := clock.NewFake(queueT0)
				l, m := artifactLimiter(c, drainSamples+2)
				if away, _ := l.artifacts.acquire(t.Context(), "holder"); away != nil {
					t.Fatal("the free slot was refused")
				}
				drain(c, l.artifacts, drainSamples, tc.pace)
				l.artifacts.max = 2
				for _, cluster := range []string{"a", "b"} {
					go download(t.Context(), l, cluster)
				}
				synctest.Wait()
				if got := testutil.ToFloat64(m.QueueWaiting.WithLabelValues("artifacts")); got != 2 {
					t.Errorf("flotilla_hub_queue_waiting{queue=artifacts} = %v; want 2", got)
				}
				rec := download(t.Context(), l, "c")
				secs := 0
				if _, err := fmt.Sscan(rec.Header().Get("Retry-After"), &secs); err != nil {
					t.Fatal(err)
				}
				if rec.Code != http.StatusTooManyRequests || secs < tc.minSecs || secs > tc.most {
					t.Fatalf("third waiting download: %d, Retry-After %q; want 429 and %d to %d s", rec.Code, rec.Header().Get("Retry-After"), tc.minSecs, tc.most)
				}
				if want := fmt.Sprintf("hub busy: 2 artifact downloads waiting, the most the hub queues; retry in %ds", secs); !strings.Contains(rec.Body.String(), want) {
					t.Errorf("body %s; want it to say %q", rec.Body, want)
				}
				if got := testutil.ToFloat64(m.QueueTurnedAway.WithLabelValues("artifacts", "full")); got != 1 {
					t.Errorf("flotilla_hub_queue_turned_away_total{reason=full} = %v; want 1", got)
				}
			})
		})
	}
}

// TestQueueHoldEndsWithItsTurn: a download held the longest the hub holds one is answered
// with the estimated time to its turn: 40 clusters were ahead of it, served every 2 s; when
// its 60 s end, 11 are still ahead, so its turn is the 12th: in 24 s.
func TestQueueHoldEndsWithItsTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewFake(queueT0)
		l, m := artifactLimiter(c, 100)
		q := l.artifacts
		if away, _ := q.acquire(t.Context(), "holder"); away != nil {
			t.Fatal("the free slot was refused")
		}
		// Queued without a hold of their own, so that only the late one's ends at 60 s.
		q.mu.Lock()
		for i := range 40 {
			q.push(fmt.Sprintf("ahead-%02d", i), c.Now())
		}
		q.mu.Unlock()
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- download(t.Context(), l, "late") }()
		synctest.Wait()
		for range 30 {
			c.Advance(2 * time.Second)
			synctest.Wait() // at 60 s the late download's hold ends first, then the release
			q.release()
		}
		rec := <-answer
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "24" {
			t.Fatalf("download held 60s: %d, Retry-After %q; want 429 and exactly 24", rec.Code, rec.Header().Get("Retry-After"))
		}
		if want := "hub busy: the artifact download waited 1m0s for a slot, 12 waiting; retry in 24s"; !strings.Contains(rec.Body.String(), want) {
			t.Errorf("body %s; want it to say %q", rec.Body, want)
		}
		if got := testutil.ToFloat64(m.QueueTurnedAway.WithLabelValues("artifacts", "expired")); got != 1 {
			t.Errorf("flotilla_hub_queue_turned_away_total{reason=expired} = %v; want 1", got)
		}
		if got := q.waiting; got != 10 {
			t.Errorf("%d waiting after the late download left; want 10", got)
		}
	})
}

// TestQueueServesAHeldDownload: a download that finds the slot taken is served once it
// frees, and its wait is observed.
func TestQueueServesAHeldDownload(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewFake(queueT0)
		l, m := artifactLimiter(c, 10)
		if away, _ := l.artifacts.acquire(t.Context(), "holder"); away != nil {
			t.Fatal("the free slot was refused")
		}
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- download(t.Context(), l, "a") }()
		synctest.Wait()
		c.Advance(5 * time.Second)
		l.artifacts.release()
		if rec := <-answer; rec.Code != http.StatusOK {
			t.Fatalf("held download: %d; want 200 once the slot freed", rec.Code)
		}
		// The holder's wait (none) and the held one's 5 s.
		if err := testutil.CollectAndCompare(m.QueueWait.WithLabelValues("artifacts").(prometheus.Histogram), strings.NewReader(`
# HELP flotilla_hub_queue_wait_seconds Time requests waited for a slot before being served, by queue (0 when one was free).
# TYPE flotilla_hub_queue_wait_seconds histogram
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="0.001"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="0.004"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="0.016"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="0.064"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="0.256"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="1.024"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="4.096"} 1
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="16.384"} 2
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="65.536"} 2
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="262.144"} 2
flotilla_hub_queue_wait_seconds_bucket{queue="artifacts",le="+Inf"} 2
flotilla_hub_queue_wait_seconds_sum{queue="artifacts"} 5
flotilla_hub_queue_wait_seconds_count{queue="artifacts"} 2
`)); err != nil {
			t.Error(err)
		}
	})
}

// TestQueueCancelledRequestLeaves: an agent that goes away leaves the queue at once: it is
// not answered, no longer counted, and the slot goes to the next one.
func TestQueueCancelledRequestLeaves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := clock.NewFake(queueT0)
		l, m := artifactLimiter(c, 10)
		q := l.artifacts
		if away, _ := q.acquire(t.Context(), "holder"); away != nil {
			t.Fatal("the free slot was refused")
		}
		ctx, cancel := context.WithCancel(t.Context())
		var s served
		s.wait(t, ctx, q, "gone", "gone")
		s.wait(t, t.Context(), q, "other", "other")
		cancel()
		synctest.Wait()
		if got := testutil.ToFloat64(m.QueueWaiting.WithLabelValues("artifacts")); got != 1 {
			t.Errorf("flotilla_hub_queue_waiting = %v after a cancel; want 1", got)
		}
		q.release()
		synctest.Wait()
		if diff := cmp.Diff([]string{"gone left", "other"}, s.get()); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		q.release()
		if q.busy != 0 || q.waiting != 0 || len(q.keys) != 0 || q.ring.Len() != 0 {
			t.Errorf("queue not empty after every request left: busy %d, waiting %d, keys %d", q.busy, q.waiting, len(q.keys))
		}
		// A request whose turn came as its client left passes the slot on.
		if away, _ := q.acquire(t.Context(), "holder"); away != nil {
			t.Fatal("the free slot was refused")
		}
		w := q.push("late", c.Now())
		q.release() // granted to w, whose client is gone
		q.mu.Lock()
		if !w.granted {
			t.Fatal("the slot was not handed to the waiting request")
		}
		q.releaseLocked(c.Now()) // what acquire does for it
		q.mu.Unlock()
		if q.busy != 0 {
			t.Errorf("busy %d after the granted request left; want the slot free", q.busy)
		}
	})
}
