// Package eventually is the tests' one way to wait for a condition: poll it until it holds or a
// timeout passes, and fail with the condition's last error, so that a failure says what was
// still wrong rather than only that time ran out. Waiting on time itself (a TTL, a lease, a
// window, a backoff) is not done here: the code under test takes a clock (internal/clock)
// and the test moves it.
package eventually

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Interval is how often a condition is polled: often enough that a test waits little past the
// moment it holds, rarely enough that polling an API server or a hub costs nothing measurable.
const Interval = 50 * time.Millisecond

// Within polls cond every Interval until it returns nil, and fails the test if it still returns
// an error after timeout (or when the test ends), with what that error says.
func Within(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(t.Context(), timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// Poll is Within without a test: it returns nil once cond holds, or an error naming the timeout
// (or ctx's end) and cond's last error.
func Poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		// Checked after a poll, not raced against the ticker: the last poll is at the timeout.
		if time.Since(start) >= timeout {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s (%v): %w", time.Since(start).Round(time.Millisecond), context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}

// True adapts a boolean condition: what says what was awaited, for the failure message.
func True(what string, cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New(what + ": not yet")
	}
}
