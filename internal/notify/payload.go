package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// webhookBody is the generic JSON document.
type webhookBody struct {
	// Kind and APIVersion identify the document for receivers that route on them.
	Kind         string         `json:"kind"`
	APIVersion   string         `json:"apiVersion"`
	Notification string         `json:"notification"`
	Time         time.Time      `json:"time"`
	Events       []Event        `json:"events"`
	Suppressed   suppressedBody `json:"suppressed"`
}

type suppressedBody struct {
	Total  int            `json:"total"`
	ByType map[string]int `json:"byType,omitempty"`
}

// WebhookBody is the generic JSON body of m: {"kind": "FleetNotification", "apiVersion",
// "notification", "time", "events": [...], "suppressed": {"total", "byType"}}.
func WebhookBody(m Message) ([]byte, error) {
	events := m.Events
	if events == nil {
		events = []Event{}
	}
	return json.Marshal(webhookBody{
		Kind: "FleetNotification", APIVersion: v1alpha1.APIVersion, Notification: m.Notification, Time: m.Time.UTC(),
		Events: events, Suppressed: suppressedBody{Total: m.SuppressedTotal(), ByType: m.Suppressed},
	})
}

// Slack limits: 50 blocks per message, 3000 characters per section.
const (
	maxSlackEvents = 40
	maxSlackError  = 500
)

var emoji = map[string]string{
	Failed: ":red_circle:", Drifted: ":warning:", Skewed: ":hourglass_flowing_sand:",
	Unreachable: ":satellite_antenna:", Recovered: ":white_check_mark:", Rollout: ":ship:",
}

// SlackBody is a Slack-compatible incoming-webhook body of m: "text" (what notifications and
// clients without blocks show) and "blocks" (one section per event, a context line for what
// was held back).
func SlackBody(m Message) ([]byte, error) {
	var lines []string
	type block map[string]any
	var blocks []block
	for i, e := range m.Events {
		if i == maxSlackEvents {
			more := fmt.Sprintf("… and %d more events", len(m.Events)-maxSlackEvents)
			lines = append(lines, more)
			blocks = append(blocks, block{"type": "context", "elements": []block{{"type": "mrkdwn", "text": more}}})
			break
		}
		line := SlackLine(e)
		lines = append(lines, line)
		blocks = append(blocks, block{"type": "section", "text": block{"type": "mrkdwn", "text": line}})
	}
	if n := m.SuppressedTotal(); n > 0 {
		var parts []string
		for _, t := range v1alpha1.NotificationEvents {
			if c := m.Suppressed[t]; c > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", c, t))
			}
		}
		s := fmt.Sprintf(":mute: %d more events held back by the rate limit of %s since the last message (%s)", n, m.Notification, strings.Join(parts, ", "))
		lines = append(lines, s)
		blocks = append(blocks, block{"type": "context", "elements": []block{{"type": "mrkdwn", "text": s}}})
	}
	return json.Marshal(map[string]any{"text": strings.Join(lines, "\n"), "blocks": blocks})
}

// SlackLine is one event in Slack's mrkdwn: "<emoji> *failed*: release `web` on cluster
// `eu-1`: phase Failed at main@abc123; error: ...".
func SlackLine(e Event) string {
	var b strings.Builder
	if e.Type == Rollout {
		return rolloutLine(e)
	}
	fmt.Fprintf(&b, "%s *%s*: release `%s` on cluster `%s`", emoji[e.Type], e.Type, e.Release, e.Cluster)
	switch e.Type {
	case Failed:
		fmt.Fprintf(&b, ": phase %s, desired %s", slackEscape(string(e.Phase)), shortRevision(e.DesiredRevision))
		if e.Conflicts > 0 {
			fmt.Fprintf(&b, ", %d conflicts", e.Conflicts)
		}
	case Drifted:
		fmt.Fprintf(&b, ": objects changed by hand at %s", slackEscape(shortRevision(e.AppliedRevision)))
	case Skewed:
		applied := slackEscape(shortRevision(e.AppliedRevision))
		if applied == "" {
			applied = "nothing"
		}
		fmt.Fprintf(&b, ": runs %s, desired %s", applied, shortRevision(e.DesiredRevision))
		if e.Since != nil {
			fmt.Fprintf(&b, " (since %s)", e.Since.UTC().Format(time.RFC3339))
		}
	case Unreachable:
		b.WriteString(": agent not heard from")
		if e.LastSeen != nil {
			fmt.Fprintf(&b, " since %s", e.LastSeen.UTC().Format(time.RFC3339))
		}
	case Recovered:
		fmt.Fprintf(&b, ": back on %s, healthy", shortRevision(e.DesiredRevision))
		if len(e.Cleared) > 0 {
			fmt.Fprintf(&b, " (was %s)", strings.Join(slices.Clone(e.Cleared), ", "))
		}
	}
	if e.Flaps > 0 {
		fmt.Fprintf(&b, "; flapped %d times", e.Flaps)
	}
	if e.Error != "" && e.Type != Recovered {
		msg := e.Error
		if len(msg) > maxSlackError {
			msg = msg[:maxSlackError] + "…"
		}
		fmt.Fprintf(&b, "\n> %s", strings.ReplaceAll(slackEscape(msg), "\n", "\n> "))
	}
	return b.String()
}

// rolloutLine is a rollout event in Slack's mrkdwn: ":ship: *rollout halted*: release
// `web`, wave `eu`: halted in wave eu: 1 of 3 clusters failed (0 allowed)".
func rolloutLine(e Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s *rollout %s*: release `%s`", emoji[Rollout], slackEscape(e.RolloutEvent), e.Release)
	if e.Wave != "" {
		fmt.Fprintf(&b, ", wave `%s`", slackEscape(e.Wave))
	}
	if e.Cluster != "" {
		fmt.Fprintf(&b, ", cluster `%s`", e.Cluster)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", slackEscape(e.Message))
	}
	if e.Actor != "" {
		fmt.Fprintf(&b, " (by %s)", slackEscape(e.Actor))
	}
	return b.String()
}

// slackEscaper escapes the three characters Slack's mrkdwn gives a meaning to. Text an agent
// sent (its error, phase and applied revision) goes through it, so that "<!channel>" or
// "<https://evil|click>" in an error message shows as typed rather than pinging a channel or
// linking somewhere.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// shortRevision cuts a commit in a revision ("main@sha1:0123456789abcdef...") to 12 digits.
func shortRevision(rev string) string {
	prefix, sha, ok := strings.Cut(rev, "sha1:")
	if ok && len(sha) > 12 {
		return prefix + "sha1:" + sha[:12]
	}
	return rev
}
