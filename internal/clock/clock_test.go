package clock

import (
	"testing"
	"time"
)

func TestFake(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a := f.After(time.Second)
	b := f.NewTimer(3 * time.Second)
	tests := []struct {
		name          string
		advance       time.Duration
		wantA, wantB  bool
		wantWaiters   int
		wantSinceFrom time.Duration
	}{
		{"nothing due yet", 999 * time.Millisecond, false, false, 2, 999 * time.Millisecond},
		{"first timer due", time.Millisecond, true, false, 1, time.Second},
		{"second timer due", 2 * time.Second, false, true, 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Advance(tt.advance)
			if got := fired(a); got != tt.wantA {
				t.Errorf("After(1s) fired = %v, want %v", got, tt.wantA)
			}
			if got := fired(b.C()); got != tt.wantB {
				t.Errorf("NewTimer(3s) fired = %v, want %v", got, tt.wantB)
			}
			if got := f.Waiters(); got != tt.wantWaiters {
				t.Errorf("Waiters() = %d, want %d", got, tt.wantWaiters)
			}
			if got := Since(f, start); got != tt.wantSinceFrom {
				t.Errorf("Since(start) = %v, want %v", got, tt.wantSinceFrom)
			}
		})
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	t.Parallel()
	f := NewFake(time.Unix(0, 0))
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer = false, want true")
	}
	f.Advance(2 * time.Second)
	if fired(tm.C()) {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer = true, want false")
	}
	f.Advance(time.Second)
	if !fired(tm.C()) {
		t.Fatal("a reset timer did not fire when due")
	}
	if Or(nil) != (Real{}) {
		t.Fatal("Or(nil) is not the real clock")
	}
}

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
