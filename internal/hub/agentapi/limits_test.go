package agentapi

import (
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
)

func TestLimiterEvictsIdleBuckets(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newLimiter(Options{AgentQPS: 20, AgentBurst: 40, GlobalQPS: 2000, GlobalBurst: 4000, MaxArtifactDownloads: 16, MaxInflightReports: 64}, c, slog.New(slog.DiscardHandler))
	for i := range 10_000 {
		l.agents.get(fmt.Sprintf("cluster-%05d", i))
	}
	// Drain one bucket: it must not come back full while it is not yet refilled.
	drained := l.agents.get("cluster-00000")
	for take(drained, c.Now()) == 0 {
	}
	if got := l.agents.len(); got != 10_000 {
		t.Fatalf("%d buckets; want 10000", got)
	}
	c.Advance(l.agents.idleAfter / 2)
	if l.agents.get("cluster-00000") != drained {
		t.Fatal("a bucket in use was replaced")
	}
	c.Advance(max(l.agents.idleAfter, 10*time.Second))
	l.agents.get("cluster-00001")
	if got := l.agents.len(); got != 1 {
		t.Errorf("%d buckets after every other cluster was idle past %v; want 1", got, l.agents.idleAfter)
	}
}

// TestGate runs in a synctest bubble: the waits are the gate's own, not the test's.
func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(1, 100*time.Millisecond, clock.Real{})
		if !g.enter(t.Context()) {
			t.Fatal("first request refused by an empty gate")
		}
		start := time.Now()
		if g.enter(t.Context()) {
			t.Fatal("second request admitted past a full gate")
		}
		if waited := time.Since(start); waited != 100*time.Millisecond {
			t.Errorf("refused after %v; want it to wait 100ms for a slot first", waited)
		}
		// One may wait; a second waiter is refused at once.
		admitted := make(chan bool, 1)
		go func() { admitted <- g.enter(t.Context()) }()
		synctest.Wait()
		start = time.Now()
		if g.enter(t.Context()) || time.Since(start) != 0 {
			t.Error("a request beyond the waiting bound was not refused at once")
		}
		g.leave()
		if !<-admitted {
			t.Error("the waiting request did not get the slot that was freed")
		}
		if g2 := newGate(1, 0, clock.Real{}); !g2.enter(t.Context()) || g2.enter(t.Context()) {
			t.Error("a gate without waiting must admit one and refuse the next at once")
		}
	})
}
