// Package backoff computes retry delays: jittered exponential backoff and the receiver's
// Retry-After.
package backoff

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Step is the delay before retry number attempt (from 1) without jitter: lo, doubled on each
// attempt, capped at hi. An attempt below 1 gets hi.
func Step(attempt int, lo, hi time.Duration) time.Duration {
	if attempt >= 1 && attempt < 32 {
		if e := lo << (attempt - 1); e > 0 && e < hi {
			return e
		}
	}
	return hi
}

// Delay is the delay before retry number attempt (from 1): exponential from lo, capped at
// hi, with "equal jitter" (half fixed, half random; jitter in [0,1)) so that many senders, or
// one sender after a receiver's outage, do not retry in step.
func Delay(attempt int, lo, hi time.Duration, jitter float64) time.Duration {
	d := Step(attempt, lo, hi)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// Spread adds up to frac of d (jitter in [0,1)), so that senders one receiver turned away
// together, with one Retry-After, do not come back together.
func Spread(d time.Duration, frac, jitter float64) time.Duration {
	return d + time.Duration(jitter*frac*float64(d))
}

// Backoff is the state of one retry loop: Next is the delay before the next retry (Delay of
// the attempts so far), Reset starts over after a success. Not safe for concurrent use; each
// loop keeps its own.
type Backoff struct {
	// Min is the first step, Max the cap.
	Min, Max time.Duration
	// Jitter returns a value in [0,1); nil means math/rand/v2.Float64.
	Jitter  func() float64
	attempt int
}

// Next counts a failed attempt and returns how long to wait before the next one.
func (b *Backoff) Next() time.Duration {
	b.attempt++
	j := rand.Float64
	if b.Jitter != nil {
		j = b.Jitter
	}
	return Delay(b.attempt, b.Min, b.Max, j())
}

// Reset forgets the failed attempts.
func (b *Backoff) Reset() { b.attempt = 0 }

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date. Anything else, or a
// time in the past, is 0.
func RetryAfter(v string, now time.Time) time.Duration {
	d, _ := ParseRetryAfter(v, now)
	return d
}

// ParseRetryAfter reads a Retry-After header (RFC 9110 section 10.2.3): delay-seconds or an
// HTTP date, a date in the past being 0. ok is false when v is empty or neither form (a
// negative or fractional number included), so the caller can tell "now" from "not said".
// A number too large for a time.Duration gives the largest one: callers cap the result.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	} else if errors.Is(err, strconv.ErrRange) {
		if strings.HasPrefix(v, "-") {
			return 0, false
		}
		return time.Duration(math.MaxInt64), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}
