package v1alpha1

import "time"

// Notification sends messages about transitions of the fleet's assignments (a release on a
// cluster) to a generic JSON webhook or a Slack-compatible incoming webhook.
type Notification struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"` // "Notification"
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       NotificationSpec `json:"spec"`
}

// Notification types.
const (
	NotificationWebhook = "webhook"
	NotificationSlack   = "slack"
)

// Notification events: what happened to an assignment.
const (
	// EventFailed: the assignment's phase is Failed, or it reports conflicts.
	EventFailed = "failed"
	// EventDrifted: the cluster reports objects changed by hand.
	EventDrifted = "drifted"
	// EventSkewed: the cluster has run another revision than the desired one for longer
	// than SkewAfter.
	EventSkewed = "skewed"
	// EventUnreachable: the cluster's agent has not been heard from for the hub's
	// unreachable-after time.
	EventUnreachable = "unreachable"
	// EventRecovered: an assignment that was announced in one of the states above is back
	// on the desired revision, healthy and reachable.
	EventRecovered = "recovered"
	// EventRollout: a step of a release's rollout (started, wave started or done, approved,
	// halted, rolled back, completed).
	EventRollout = "rollout"
)

// NotificationEvents are every event, in the order messages list them.
var NotificationEvents = []string{EventFailed, EventDrifted, EventSkewed, EventUnreachable, EventRecovered, EventRollout}

// NotificationSpec says where messages go, about which assignments, and how many at most.
type NotificationSpec struct {
	// Type is "webhook" (a generic JSON document) or "slack" (a Slack incoming-webhook
	// {"text": ..., "blocks": [...]} body; receivers of Slack's format without blocks show
	// the text).
	Type string `json:"type"`
	// URL receives the messages by POST: https://, or http:// with Insecure. Exactly one of
	// URL and URLFile.
	URL string `json:"url,omitempty"`
	// URLFile names a file on the hub holding the URL, for URLs that are secrets (a Slack
	// webhook URL is one). It is read at every send, so it can be rotated in place.
	URLFile string `json:"urlFile,omitempty"`
	// Insecure allows an http:// URL (or URL file content); without it plain HTTP is refused.
	Insecure bool `json:"insecure,omitempty"`
	// Events to send: some of failed, drifted, skewed, unreachable, recovered. Default: all.
	Events []string `json:"events,omitempty"`
	// Releases limits the notification to these releases. Default: every release.
	Releases []string `json:"releases,omitempty"`
	// ClusterSelector limits the notification to clusters with these labels. Default: every
	// cluster.
	ClusterSelector LabelSelector `json:"clusterSelector,omitzero"`
	// SkewAfter is how long an assignment may run another revision than the desired one
	// before it is skewed: a rollout in progress is not news. Default 10m.
	SkewAfter Duration `json:"skewAfter,omitzero"`
	// RateLimit bounds the messages sent. Default: 10 per 10m.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
}

// RateLimit is a token bucket: at most Messages at once, refilled at Messages per Per. What
// it holds back is counted and summarised in the next message.
type RateLimit struct {
	Messages int      `json:"messages"`
	Per      Duration `json:"per"`
}

// Notification defaults.
const (
	DefaultSkewAfter         = 10 * time.Minute
	DefaultRateLimitMessages = 10
	DefaultRateLimitPer      = 10 * time.Minute
)

// EventsOrDefault is the events to send: Events, or every event when unset.
func (s NotificationSpec) EventsOrDefault() []string {
	if len(s.Events) == 0 {
		return NotificationEvents
	}
	return s.Events
}

// SkewAfterOrDefault is SkewAfter, or 10m when unset.
func (s NotificationSpec) SkewAfterOrDefault() time.Duration {
	if s.SkewAfter.Duration == 0 {
		return DefaultSkewAfter
	}
	return s.SkewAfter.Duration
}

// RateLimitOrDefault is RateLimit, or 10 messages per 10m when unset.
func (s NotificationSpec) RateLimitOrDefault() RateLimit {
	if s.RateLimit == nil {
		return RateLimit{Messages: DefaultRateLimitMessages, Per: Duration{DefaultRateLimitPer}}
	}
	return *s.RateLimit
}
