package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// maxRetryAfter caps what the agent honours from a Retry-After, so that a wrong value cannot
// silence an agent for long.
const maxRetryAfter = 10 * time.Minute

// retryAfter returns how long the hub asked the agent to wait before calling again: the
// Retry-After in the metadata of a *connect.Error (the hub sends it with resource_exhausted
// when it sheds load). It reports false for any other error, leaving the caller's own backoff.
func retryAfter(err error) (time.Duration, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0, false
	}
	return parseRetryAfter(ce.Meta().Get("Retry-After"), time.Now())
}

// retryAfterResponse is retryAfter for a plain HTTP response: a 429 or 503 with a
// Retry-After. A 429 without one still means "later": one second.
func retryAfterResponse(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		return d, true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return time.Second, true
	}
	return 0, false
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date (RFC 9110
// section 10.2.3), capped at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// withJitter adds up to 20% to d, so that agents the hub refused together spread out.
func withJitter(d time.Duration) time.Duration {
	return d + rand.N(d/5+1)
}

// holdOff waits out the hub's Retry-After (with jitter) if err carries one, and reports
// whether it did; otherwise the caller applies its usual backoff.
func (a *Agent) holdOff(ctx context.Context, what string, err error) bool {
	d, ok := retryAfter(err)
	if !ok {
		return false
	}
	d = withJitter(d)
	a.log.Info(what+": hub busy; retrying later", "in", d.Round(time.Millisecond))
	sleep(ctx, d)
	return true
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// hubBusyError is an artifact download the hub refused because it is shedding load: not a
// failure of the assignment, and retried after RetryIn.
type hubBusyError struct {
	Digest  string
	RetryIn time.Duration
}

func (e *hubBusyError) Error() string {
	return fmt.Sprintf("artifact %s: hub busy, retrying in %s", e.Digest, e.RetryIn.Round(100*time.Millisecond))
}

func asHubBusy(err error) (*hubBusyError, bool) {
	var busy *hubBusyError
	ok := errors.As(err, &busy)
	return busy, ok
}

// tooLarge reports whether the hub refused a request for its size or shape (read limit
// exceeded without Retry-After, or too many statuses), rather than for load.
func tooLarge(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return false
	}
	if _, busy := retryAfter(err); busy {
		return false
	}
	return ce.Code() == connect.CodeResourceExhausted || ce.Code() == connect.CodeInvalidArgument
}
