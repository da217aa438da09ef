package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func notification(spec string) string {
	return "apiVersion: flotilla.dev/v1alpha1\nkind: Notification\nmetadata: {name: ops}\nspec:\n" + spec
}

func TestParseNotification(t *testing.T) {
	t.Parallel()
	const f = "fleet/notifications.yaml"
	tests := []struct {
		name string
		spec string
		want []Problem // nil: valid
	}{
		{name: "minimal webhook", spec: "  type: webhook\n  url: https://hooks.example.com/x\n"},
		{name: "plain HTTP marked insecure", spec: "  type: webhook\n  url: http://hooks.internal/x\n  insecure: true\n"},
		{name: "plain HTTP", spec: "  type: webhook\n  url: http://hooks.internal/x\n", want: []Problem{{f, "Notification/ops", "spec.url", "is plain HTTP: use https://, or set insecure: true to accept it", 0}}},
		{name: "slack with a URL file", spec: "  type: slack\n  urlFile: /run/secrets/slack\n  events: [recovered, failed]\n"},
		{name: "no URL", spec: "  type: slack\n", want: []Problem{{f, "Notification/ops", "spec", "set url, or urlFile naming a file on the hub that holds it", 0}}},
		{name: "no type", spec: "  url: https://x\n", want: []Problem{{f, "Notification/ops", "spec.type", "must be set: webhook or slack", 0}}},
		{name: "URL without a scheme", spec: "  type: webhook\n  url: hooks.example.com/x\n", want: []Problem{{f, "Notification/ops", "spec.url", "must be an http:// or https:// URL", 0}}},
		{name: "negative skew grace", spec: "  type: webhook\n  url: https://x\n  skewAfter: -1m\n", want: []Problem{{f, "Notification/ops", "spec.skewAfter", "must be positive, not -1m0s", 0}}},
		{name: "bad selector", spec: "  type: webhook\n  url: https://x\n  clusterSelector: {matchLabels: {\"a b\": x}}\n", want: []Problem{{f, "Notification/ops", "spec.clusterSelector.matchLabels[a b]",
			`label key "a b" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`, 0}}},
		{name: "unknown field", spec: "  type: webhook\n  url: https://x\n  event: [failed]\n", want: []Problem{{f, "Notification/ops", "spec.event", `unknown field "event", did you mean "events"?`, 0}}},
		{name: "fractional rate", spec: "  type: webhook\n  url: https://x\n  rateLimit: {messages: 1.5, per: 1m}\n", want: []Problem{{f, "Notification/ops", "spec.rateLimit.messages", "must be a whole number, not the number 1.5", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(map[string][]byte{f: []byte(notification(tt.spec))})
			var got []Problem
			if err != nil {
				ie, ok := err.(*InvalidError)
				if !ok {
					t.Fatalf("error %T: %v", err, err)
				}
				got = ie.Problems
			}
			if diff := cmp.Diff(tt.want, got, ignoreLine); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotificationDefaults(t *testing.T) {
	t.Parallel()
	var s NotificationSpec
	if got := s.EventsOrDefault(); !cmp.Equal(got, []string{"failed", "drifted", "skewed", "unreachable", "recovered", "rollout"}) {
		t.Errorf("default events = %v", got)
	}
	if s.SkewAfterOrDefault() != 10*time.Minute {
		t.Errorf("default skewAfter = %v", s.SkewAfterOrDefault())
	}
	if rl := s.RateLimitOrDefault(); rl.Messages != 10 || rl.Per.Duration != 10*time.Minute {
		t.Errorf("default rate limit = %+v", rl)
	}
	s = NotificationSpec{Events: []string{EventFailed}, SkewAfter: Duration{time.Minute}, RateLimit: &RateLimit{Messages: 2, Per: Duration{time.Hour}}}
	if !cmp.Equal(s.EventsOrDefault(), []string{"failed"}) || s.SkewAfterOrDefault() != time.Minute || s.RateLimitOrDefault().Messages != 2 {
		t.Errorf("set values not kept: %+v", s)
	}
}
