package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func sampleMessage() Message {
	seen := t0.Add(-5 * time.Minute)
	since := t0.Add(-15 * time.Minute)
	return Message{
		Notification: "ops", Time: t0,
		Events: []Event{
			{Type: Failed, Release: "web", Cluster: "eu-1", Phase: "Failed", DesiredRevision: "main@sha1:0123456789abcdef0123", AppliedRevision: "main@sha1:0123456789abcdef0123",
				Error: "Deployment/web/api apply failed:\nimage missing", Conflicts: 1, Reachable: true, LastSeen: &seen, Time: t0, Flaps: 2},
			{Type: Skewed, Release: "web", Cluster: "us-1", DesiredRevision: "main@sha1:0123456789abcdef0123", AppliedRevision: "main@sha1:fedcba9876543210fedc", Time: t0, Since: &since},
			{Type: Unreachable, Release: "web", Cluster: "ap-1", LastSeen: &seen, Time: t0},
			{Type: Recovered, Release: "db", Cluster: "eu-1", DesiredRevision: "v1.2.0", AppliedRevision: "v1.2.0", Cleared: []string{Failed, Drifted}, Time: t0},
		},
		Suppressed: map[string]int{Failed: 3, Recovered: 1},
	}
}

func TestWebhookBody(t *testing.T) {
	t.Parallel()
	body, err := WebhookBody(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind, APIVersion, Notification string
		Time                           time.Time
		Events                         []map[string]any
		Suppressed                     struct {
			Total  int
			ByType map[string]int
		}
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "FleetNotification" || got.APIVersion != "flotilla.dev/v1alpha1" || got.Notification != "ops" || !got.Time.Equal(t0) {
		t.Errorf("envelope: %s", body)
	}
	if len(got.Events) != 4 || got.Suppressed.Total != 4 || got.Suppressed.ByType["failed"] != 3 {
		t.Fatalf("events or suppressed: %s", body)
	}
	e := got.Events[0]
	for k, want := range map[string]any{
		"type": "failed", "release": "web", "cluster": "eu-1", "phase": "Failed", "conflicts": float64(1), "flaps": float64(2),
		"error": "Deployment/web/api apply failed:\nimage missing", "lastSeen": "2026-11-30T11:55:00Z", "reachable": true,
	} {
		if fmt.Sprint(e[k]) != fmt.Sprint(want) {
			t.Errorf("events[0].%s = %v, want %v", k, e[k], want)
		}
	}
	if got.Events[3]["cleared"] == nil || got.Events[1]["since"] != "2026-11-30T11:45:00Z" {
		t.Errorf("cleared or since missing: %s", body)
	}
	empty, _ := WebhookBody(Message{Notification: "ops", Time: t0, Suppressed: map[string]int{Drifted: 2}})
	if !strings.Contains(string(empty), `"events":[]`) || !strings.Contains(string(empty), `"total":2`) {
		t.Errorf("summary-only body: %s", empty)
	}
}

func TestSlackBody(t *testing.T) {
	t.Parallel()
	body, err := SlackBody(sampleMessage())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Text   string
		Blocks []struct {
			Type string
			Text struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{
		":red_circle: *failed*: release `web` on cluster `eu-1`: phase Failed, desired main@sha1:0123456789ab, 1 conflicts; flapped 2 times\n> Deployment/web/api apply failed:\n> image missing",
		":hourglass_flowing_sand: *skewed*: release `web` on cluster `us-1`: runs main@sha1:fedcba987654, desired main@sha1:0123456789ab (since 2026-11-30T11:45:00Z)",
		":satellite_antenna: *unreachable*: release `web` on cluster `ap-1`: agent not heard from since 2026-11-30T11:55:00Z",
		":white_check_mark: *recovered*: release `db` on cluster `eu-1`: back on v1.2.0, healthy (was failed, drifted)",
		":mute: 4 more events held back by the rate limit of ops since the last message (3 failed, 1 recovered)",
	}
	if got.Text != strings.Join(want, "\n") {
		t.Errorf("text:\n%s\nwant:\n%s", got.Text, strings.Join(want, "\n"))
	}
	if len(got.Blocks) != 5 || got.Blocks[0].Type != "section" || got.Blocks[0].Text.Type != "mrkdwn" || got.Blocks[0].Text.Text != want[0] || got.Blocks[4].Type != "context" {
		t.Errorf("blocks: %s", body)
	}

	// A storm is cut to what Slack takes (50 blocks).
	var m Message
	for i := range 100 {
		m.Events = append(m.Events, Event{Type: Failed, Release: "web", Cluster: fmt.Sprintf("c%03d", i)})
	}
	body, _ = SlackBody(m)
	got.Blocks = nil
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Blocks) != maxSlackEvents+1 || !strings.HasSuffix(got.Text, "… and 60 more events") {
		t.Errorf("100 events: %d blocks, text ends %q", len(got.Blocks), got.Text[len(got.Text)-40:])
	}
}

func TestSlackLineEscapesAgentText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{
			"an error that mentions the channel and links elsewhere",
			Event{Type: Failed, Release: "web", Cluster: "eu-1", Phase: "Failed", DesiredRevision: "v1",
				Error: "<!channel> see <https://evil.example|the fix> & retry\nx > y"},
			":red_circle: *failed*: release `web` on cluster `eu-1`: phase Failed, desired v1" +
				"\n> &lt;!channel&gt; see &lt;https://evil.example|the fix&gt; &amp; retry\n> x &gt; y",
		},
		{
			"a phase and an applied revision from the agent",
			Event{Type: Drifted, Release: "web", Cluster: "eu-1", AppliedRevision: "<@U123>"},
			":warning: *drifted*: release `web` on cluster `eu-1`: objects changed by hand at &lt;@U123&gt;",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := SlackLine(tt.e)
			if got != tt.want {
				t.Errorf("SlackLine:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
