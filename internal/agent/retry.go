package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/backoff"
)

// maxRetryAfter caps what the agent honours from a Retry-After, so that a wrong value cannot
// silence an agent for long.
const maxRetryAfter = 10 * time.Minute

// retryAfter returns how long the hub asked the agent to wait before calling again: the
// Retry-After in the metadata of a *connect.Error (the hub sends it with resource_exhausted
// when it sheds load), capped at maxRetryAfter. It reports false for any other error, leaving
// the caller's own backoff.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0, false
	}
	d, ok := backoff.ParseRetryAfter(ce.Meta().Get("Retry-After"), now)
	return min(d, maxRetryAfter), ok
}

// retryAfterResponse is retryAfter for a plain HTTP response: a 429 or 503 with a
// Retry-After. A 429 without one still means "later": one second.
func retryAfterResponse(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	if d, ok := backoff.ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
		return min(d, maxRetryAfter), true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return time.Second, true
	}
	return 0, false
}

// maxJitter caps what withJitter adds.
const maxJitter = 2 * time.Second

// withJitter adds up to 10% of d, at most maxJitter, so that agents told the same moment do
// not all come back in the same instant. Small, because the hub's Retry-After is already
// meant: its download queue says when each request's own turn comes, and what it refuses in
// bulk it spreads itself.
func withJitter(d time.Duration) time.Duration {
	return min(backoff.Spread(d, 0.1, rand.Float64()), d+maxJitter)
}

// holdOff waits out the hub's Retry-After (with jitter) if err carries one, and reports
// whether it did; otherwise the caller applies its usual backoff.
func (a *Agent) holdOff(ctx context.Context, what string, err error) bool {
	d, ok := retryAfter(err, a.clock.Now())
	if !ok {
		return false
	}
	d = withJitter(d)
	a.log.Info(what+": hub busy; retrying later", "in", d.Round(time.Millisecond))
	a.sleep(ctx, d)
	return true
}

// sleep waits d on the agent's clock, or until ctx ends.
func (a *Agent) sleep(ctx context.Context, d time.Duration) {
	t := a.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
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
	if _, busy := retryAfter(err, time.Time{}); busy { // whether it is readable does not depend on now
		return false
	}
	return ce.Code() == connect.CodeResourceExhausted || ce.Code() == connect.CodeInvalidArgument
}
