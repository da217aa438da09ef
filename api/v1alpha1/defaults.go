package v1alpha1

import "time"

// Defaults for fields left unset. They are applied by the methods below, not written into the
// objects, so a fleet read and written back is unchanged.
const (
	DefaultSourceInterval  = time.Minute
	DefaultReleaseTimeout  = 5 * time.Minute
	DefaultReleaseInterval = 10 * time.Minute
	// MinSourceInterval protects Git servers from a fleet repository that asks for a poll
	// many times a second. The hub fetches each source once per poll however many clusters
	// use it, so a short interval costs one fetch, not one per cluster.
	MinSourceInterval = 2 * time.Second
)

// IntervalOrDefault is how often the hub polls the source: Interval, or 1m when unset.
func (s SourceSpec) IntervalOrDefault() time.Duration {
	if s.Interval.Duration == 0 {
		return DefaultSourceInterval
	}
	return s.Interval.Duration
}

// SelfHealOrDefault reports whether the agent corrects drift: SelfHeal, or true when unset.
func (s ReleaseSpec) SelfHealOrDefault() bool {
	if s.SelfHeal == nil {
		return true
	}
	return *s.SelfHeal
}

// TimeoutOrDefault bounds the health wait: Timeout, or 5m when unset.
func (s ReleaseSpec) TimeoutOrDefault() time.Duration {
	if s.Timeout.Duration == 0 {
		return DefaultReleaseTimeout
	}
	return s.Timeout.Duration
}

// IntervalOrDefault is the time between the agent's reconciles: Interval, or 10m when unset.
func (s ReleaseSpec) IntervalOrDefault() time.Duration {
	if s.Interval.Duration == 0 {
		return DefaultReleaseInterval
	}
	return s.Interval.Duration
}
