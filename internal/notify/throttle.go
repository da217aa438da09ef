package notify

import (
	"maps"
	"time"

	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Message is what one request carries: the events of one evaluation, and how many events
// the rate limit held back since the last message.
type Message struct {
	Notification string
	Time         time.Time
	Events       []Event
	// Suppressed counts events held back by the rate limit, by type.
	Suppressed map[string]int
}

// SuppressedTotal is the number of events held back.
func (m Message) SuppressedTotal() int {
	n := 0
	for _, v := range m.Suppressed {
		n += v
	}
	return n
}

// Throttle is one notification's token bucket. It is driven by the caller's clock, so its
// tests need no sleeping. Not safe for concurrent use.
type Throttle struct {
	name       string
	lim        *rate.Limiter
	suppressed map[string]int
}

// NewThrottle allows rl.Messages messages at once, refilled at rl.Messages per rl.Per.
func NewThrottle(name string, rl v1alpha1.RateLimit) *Throttle {
	every := rl.Per.Duration / time.Duration(max(1, rl.Messages))
	return &Throttle{name: name, lim: rate.NewLimiter(rate.Every(every), max(1, rl.Messages)), suppressed: map[string]int{}}
}

// Offer returns the message to send now for events, if the bucket has a token: the events
// and the summary of what was held back before. Without a token the events are counted as
// suppressed. With no events, a message carrying only the summary is returned once a token
// is available, so that what was held back is told even when nothing new happens.
func (t *Throttle) Offer(now time.Time, events []Event) (Message, bool) {
	if len(events) == 0 && len(t.suppressed) == 0 {
		return Message{}, false
	}
	if !t.lim.AllowN(now, 1) {
		t.Suppress(events)
		return Message{}, false
	}
	m := Message{Notification: t.name, Time: now, Events: events}
	if len(t.suppressed) > 0 {
		m.Suppressed = maps.Clone(t.suppressed)
		clear(t.suppressed)
	}
	return m, true
}

// Suppress counts events that will not be sent (also used when a message could not be
// queued), so the next message tells of them.
func (t *Throttle) Suppress(events []Event) {
	for _, e := range events {
		t.suppressed[e.Type]++
	}
}

// Return takes back a message that could not be handed to delivery: its events and the
// summary it carried are counted again, for the next message.
func (t *Throttle) Return(m Message) {
	t.Suppress(m.Events)
	for typ, c := range m.Suppressed {
		t.suppressed[typ] += c
	}
}
