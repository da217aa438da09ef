// Package clock is the time source the hub and the agent take from their Options, so that
// leases, TTLs, backoff and intervals can be tested by moving a clock rather than by sleeping.
//
// Real is the wall clock. Fake only moves when a test calls Advance. Code under
// testing/synctest can keep Real: inside a bubble, the time package itself is fake.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and waits for it.
type Clock interface {
	Now() time.Time
	// After is time.After on this clock.
	After(d time.Duration) <-chan time.Time
	// NewTimer is time.NewTimer on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that callers use.
type Timer interface {
	C() <-chan time.Time
	// Stop and Reset behave as (*time.Timer).Stop and Reset.
	Stop() bool
	Reset(d time.Duration) bool
}

// Since is time.Since on c.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Or returns c, or Real when c is nil: what an Options.setDefaults calls.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a clock that moves only when Advance or Set is called. Its zero value is not
// usable: call NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer
}

// NewFake returns a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After fires once the clock has been advanced by d.
func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

// NewTimer returns a timer that fires once the clock has been advanced by d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.schedule(t, d)
	return t
}

// Advance moves the clock forward by d and fires every timer that is due, in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.fire()
	f.mu.Unlock()
}

// Waiters is how many timers are pending: a test waits for it to reach the number of
// goroutines it expects to be waiting before it advances the clock.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// schedule is called with f.mu held.
func (f *Fake) schedule(t *fakeTimer, d time.Duration) {
	t.at = f.now.Add(d)
	t.armed = true
	if d <= 0 {
		t.armed = false
		t.send(f.now)
		return
	}
	f.waiters = append(f.waiters, t)
}

// fire is called with f.mu held.
func (f *Fake) fire() {
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, t := range f.waiters {
		if !t.at.After(f.now) {
			t.armed = false
			t.send(t.at)
			continue
		}
		kept = append(kept, t)
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
}

// remove is called with f.mu held.
func (f *Fake) remove(t *fakeTimer) bool {
	for i, w := range f.waiters {
		if w == t {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return true
		}
	}
	return false
}

type fakeTimer struct {
	f     *Fake
	c     chan time.Time
	at    time.Time
	armed bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) send(now time.Time) {
	select {
	case t.c <- now:
	default: // a value is already waiting, as with a time.Timer
	}
}

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.armed
	t.armed = false
	t.f.remove(t)
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.armed
	t.f.remove(t)
	select { // drain, so that Reset never delivers a stale time
	case <-t.c:
	default:
	}
	t.f.schedule(t, d)
	return was
}
