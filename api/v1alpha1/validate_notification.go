package v1alpha1

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

func validateNotificationSpec(s NotificationSpec, releases map[string]string, add func(field, msg string)) {
	switch s.Type {
	case NotificationWebhook, NotificationSlack:
	case "":
		add("spec.type", fmt.Sprintf("must be set: %s or %s", NotificationWebhook, NotificationSlack))
	default:
		add("spec.type", fmt.Sprintf("%q is not a notification type: want %s or %s", s.Type, NotificationWebhook, NotificationSlack))
	}
	switch {
	case s.URL == "" && s.URLFile == "":
		add("spec", "set url, or urlFile naming a file on the hub that holds it")
	case s.URL != "" && s.URLFile != "":
		add("spec", "set url or urlFile, not both")
	case s.URL != "":
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("spec.url", "must be an http:// or https:// URL")
		} else if u.Scheme == "http" && !s.Insecure {
			add("spec.url", "is plain HTTP: use https://, or set insecure: true to accept it")
		}
	}
	seen := map[string]bool{}
	for i, e := range s.Events {
		f := fmt.Sprintf("spec.events[%d]", i)
		switch {
		case !slices.Contains(NotificationEvents, e):
			add(f, fmt.Sprintf("%q is not an event: want %s", e, strings.Join(NotificationEvents, ", ")))
		case seen[e]:
			add(f, fmt.Sprintf("%q is listed twice", e))
		}
		seen[e] = true
	}
	for i, r := range s.Releases {
		if _, ok := releases[r]; !ok {
			add(fmt.Sprintf("spec.releases[%d]", i), fmt.Sprintf("release %q is not defined", r))
		}
	}
	validateLabels("spec.clusterSelector.matchLabels", s.ClusterSelector.MatchLabels, add)
	if s.SkewAfter.Duration < 0 {
		add("spec.skewAfter", fmt.Sprintf("must be positive, not %v", s.SkewAfter.Duration))
	}
	if rl := s.RateLimit; rl != nil {
		if rl.Messages < 1 {
			add("spec.rateLimit.messages", fmt.Sprintf("must be at least 1, not %d", rl.Messages))
		}
		if rl.Per.Duration <= 0 {
			add("spec.rateLimit.per", "must be a positive duration such as \"10m\"")
		}
	}
}
