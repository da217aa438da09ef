// Package backoff computes retry delays: jittered exponential backoff and the receiver's
// Retry-After.
package backoff

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delay is the delay before retry number attempt (from 1): exponential from lo, capped at
// hi, with "equal jitter" (half fixed, half random; jitter in [0,1)) so that many senders, or
// one sender after a receiver's outage, do not retry in step.
func Delay(attempt int, lo, hi time.Duration, jitter float64) time.Duration {
	d := hi
	if attempt >= 1 && attempt < 32 {
		if e := lo << (attempt - 1); e > 0 && e < hi {
			d = e
		}
	}
	return d/2 + time.Duration(jitter*float64(d/2))
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date. Anything else, or a
// time in the past, is 0.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return max(0, time.Duration(secs)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}
