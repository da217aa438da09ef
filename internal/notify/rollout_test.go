package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A rollout event reads as a step of the release's rollout, not as an assignment's condition,
// and what an actor or a wave name carries is escaped like an agent's text.
func TestRolloutEventPayloads(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	e := Event{Type: Rollout, Release: "web", Time: at, RolloutEvent: "halted", Wave: "canary",
		Message: "halted in wave canary: 1 of 1 clusters failed (0 allowed)"}
	for _, tt := range []struct {
		name string
		e    Event
		want string
	}{
		{"halted", e, ":ship: *rollout halted*: release `web`, wave `canary`: halted in wave canary: 1 of 1 clusters failed (0 allowed)"},
		{"approved by someone", Event{Type: Rollout, Release: "web", RolloutEvent: "approved", Wave: "rest", Message: "wave rest approved", Actor: "oidc:<!channel>"},
			":ship: *rollout approved*: release `web`, wave `rest`: wave rest approved (by oidc:&lt;!channel&gt;)"},
		{"a cluster's failure", Event{Type: Rollout, Release: "web", Cluster: "eu-1", RolloutEvent: "cluster-failed", Message: "reported Failed"},
			":ship: *rollout cluster-failed*: release `web`, cluster `eu-1`: reported Failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SlackLine(tt.e); got != tt.want {
				t.Errorf("SlackLine:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	body, err := WebhookBody(Message{Notification: "ops", Time: at, Events: []Event{e}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Events[0]
	if got["type"] != "rollout" || got["rolloutEvent"] != "halted" || got["wave"] != "canary" || !strings.Contains(got["message"].(string), "halted in wave canary") {
		t.Errorf("webhook event %v", got)
	}
}
