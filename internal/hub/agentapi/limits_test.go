package agentapi

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/flotilla/flotilla/internal/clock"
)

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
