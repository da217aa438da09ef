package notify

import (
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Rollout events go to the notifications that listen to every event or to "rollout", for the
// releases they select; the queue between the controller and the notifier is bounded.
func TestRolloutNotifications(t *testing.T) {
	t.Parallel()
	n := &Runner{}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	n.Rollout("web", phase.RolloutEvent{At: at, Type: "halted", Wave: "canary", Message: "halted"})
	n.Rollout("api", phase.RolloutEvent{At: at, Type: "completed"})
	events := n.takeRollouts()
	if len(events) != 2 || events[0].Type != Rollout || events[0].RolloutEvent != "halted" || events[0].Wave != "canary" {
		t.Fatalf("queued %+v", events)
	}
	if again := n.takeRollouts(); len(again) != 0 {
		t.Errorf("events taken twice: %+v", again)
	}
	nt := func(events, releases []string) v1alpha1.Notification {
		return v1alpha1.Notification{Spec: v1alpha1.NotificationSpec{Events: events, Releases: releases}}
	}
	for _, tt := range []struct {
		name string
		nt   v1alpha1.Notification
		want int
	}{
		{"every event, every release", nt(nil, nil), 2},
		{"every event, release web", nt(nil, []string{"web"}), 1},
		{"failed only", nt([]string{"failed"}, nil), 0},
		{"rollout named", nt([]string{"failed", "rollout"}, []string{"api"}), 1},
	} {
		if got := rolloutsFor(tt.nt, events); len(got) != tt.want {
			t.Errorf("%s: %d events, want %d", tt.name, len(got), tt.want)
		}
	}
	for range maxPendingRollouts + 10 {
		n.Rollout("web", phase.RolloutEvent{At: at, Type: "wave-started"})
	}
	if got := len(n.takeRollouts()); got != maxPendingRollouts {
		t.Errorf("%d events queued, want at most %d", got, maxPendingRollouts)
	}
}
