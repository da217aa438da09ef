package notify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

func TestThrottle(t *testing.T) {
	t.Parallel()
	// Two messages at once, then one every 30s.
	th := NewThrottle("ops", v1alpha1.RateLimit{Messages: 2, Per: v1alpha1.Duration{Duration: time.Minute}})
	ev := func(types ...string) []Event {
		var out []Event
		for _, typ := range types {
			out = append(out, Event{Type: typ, Release: "web", Cluster: "c1"})
		}
		return out
	}
	steps := []struct {
		at             time.Duration
		events         []Event
		wantSent       bool
		wantEvents     int
		wantSuppressed map[string]int
	}{
		{at: 0, events: nil},
		{at: 0, events: ev(Failed), wantSent: true, wantEvents: 1},
		{at: time.Second, events: ev(Failed, Drifted), wantSent: true, wantEvents: 2},
		{at: 2 * time.Second, events: ev(Failed)},               // bucket empty: held back
		{at: 3 * time.Second, events: ev(Recovered, Recovered)}, // still empty
		{at: 10 * time.Second, events: nil},
		{at: 32 * time.Second, events: ev(Unreachable), wantSent: true, wantEvents: 1, wantSuppressed: map[string]int{Failed: 1, Recovered: 2}},
		{at: 33 * time.Second, events: ev(Failed)},
		// Nothing new, but a token: the summary goes alone.
		{at: 70 * time.Second, events: nil, wantSent: true, wantSuppressed: map[string]int{Failed: 1}},
		{at: 200 * time.Second, events: nil},
	}
	for i, s := range steps {
		m, sent := th.Offer(t0.Add(s.at), s.events)
		if sent != s.wantSent {
			t.Fatalf("step %d: sent = %v, want %v", i, sent, s.wantSent)
		}
		if !sent {
			continue
		}
		if len(m.Events) != s.wantEvents || m.Notification != "ops" || !m.Time.Equal(t0.Add(s.at)) {
			t.Errorf("step %d: message %+v", i, m)
		}
		if diff := cmp.Diff(s.wantSuppressed, m.Suppressed); diff != "" {
			t.Errorf("step %d: suppressed (-want +got):\n%s", i, diff)
		}
	}
}

func TestThrottleReturn(t *testing.T) {
	t.Parallel()
	th := NewThrottle("ops", v1alpha1.RateLimit{Messages: 1, Per: v1alpha1.Duration{Duration: time.Second}})
	th.Suppress([]Event{{Type: Drifted}})
	m, ok := th.Offer(t0, []Event{{Type: Failed}})
	if !ok || m.SuppressedTotal() != 1 {
		t.Fatalf("first message: %+v, %v", m, ok)
	}
	th.Return(m) // could not be queued
	m, ok = th.Offer(t0.Add(time.Second), nil)
	if !ok || len(m.Events) != 0 || !cmp.Equal(m.Suppressed, map[string]int{Failed: 1, Drifted: 1}) {
		t.Errorf("after Return: %+v, %v; want a summary of 1 failed and 1 drifted", m, ok)
	}
}
