package agent

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/phase"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func connectErr(code connect.Code, retryAfter ...string) error {
	err := connect.NewError(code, errors.New("hub busy"))
	for _, v := range retryAfter {
		err.Meta().Add("Retry-After", v)
	}
	return err
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"seconds from a shedding hub", connectErr(connect.CodeResourceExhausted, "3"), 3 * time.Second, true},
		{"wrapped", fmt.Errorf("report: %w", connectErr(connect.CodeResourceExhausted, "1")), time.Second, true},
		{"any code that carries one", connectErr(connect.CodeUnavailable, "2"), 2 * time.Second, true},
		{"zero", connectErr(connect.CodeResourceExhausted, "0"), 0, true},
		{"spaces", connectErr(connect.CodeResourceExhausted, " 4 "), 4 * time.Second, true},
		{"first of several", connectErr(connect.CodeResourceExhausted, "5", "9"), 5 * time.Second, true},
		{"capped", connectErr(connect.CodeResourceExhausted, "86400"), maxRetryAfter, true},
		{"huge does not overflow", connectErr(connect.CodeResourceExhausted, "9223372036854775807"), maxRetryAfter, true},
		{"absent: message too large", connectErr(connect.CodeResourceExhausted), 0, false},
		{"negative", connectErr(connect.CodeResourceExhausted, "-1"), 0, false},
		{"fraction", connectErr(connect.CodeResourceExhausted, "1.5"), 0, false},
		{"garbage", connectErr(connect.CodeResourceExhausted, "soon"), 0, false},
		{"not a connect error", errors.New("connection refused"), 0, false},
		{"nil", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := retryAfter(tc.err, time.Now())
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRetryAfterResponse(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		want       time.Duration
		ok         bool
	}{
		{"429 with Retry-After", http.StatusTooManyRequests, "7", 7 * time.Second, true},
		{"429 without: a second", http.StatusTooManyRequests, "", time.Second, true},
		{"429 unreadable: a second", http.StatusTooManyRequests, "later", time.Second, true},
		{"503 with Retry-After", http.StatusServiceUnavailable, "2", 2 * time.Second, true},
		{"an HTTP date", http.StatusTooManyRequests, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"a date far ahead: capped", http.StatusServiceUnavailable, now.Add(24 * time.Hour).Format(http.TimeFormat), maxRetryAfter, true},
		{"seconds far ahead: capped", http.StatusTooManyRequests, "86400", maxRetryAfter, true},
		{"503 without: an ordinary failure", http.StatusServiceUnavailable, "", 0, false},
		{"200", http.StatusOK, "3", 0, false},
		{"403", http.StatusForbidden, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The response is built here, not in the table: a header and a status are all it needs.
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			if tc.retryAfter != "" {
				resp.Header.Set("Retry-After", tc.retryAfter)
			}
			got, ok := retryAfterResponse(resp, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfterResponse = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestWithJitter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d, most time.Duration
	}{
		{5 * time.Second, 5500 * time.Millisecond}, // up to 10%
		{time.Minute, 62 * time.Second},            // at most 2s
	} {
		seen := map[time.Duration]bool{}
		for range 1000 {
			got := withJitter(tc.d)
			if got < tc.d || got > tc.most {
				t.Fatalf("withJitter(%v) = %v; want within [%v, %v]", tc.d, got, tc.d, tc.most)
			}
			seen[got] = true
		}
		if len(seen) < 100 {
			t.Errorf("withJitter(%v) gave only %d distinct waits in 1000 calls", tc.d, len(seen))
		}
	}
	if got := withJitter(0); got != 0 {
		t.Errorf("withJitter(0) = %v", got)
	}
}

func TestHubBusyStatus(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("release web: %w", &hubBusyError{Digest: "sha256:abc", RetryIn: 3 * time.Second})
	st := &agentv1.AssignmentStatus{}
	fillStatus(st, nil, err)
	if phase.Phase(st.Phase) != phase.Pending || st.Error != "release web: artifact sha256:abc: hub busy, retrying in 3s" {
		t.Errorf("status = %q %q; want Pending with the hub-busy message", st.Phase, st.Error)
	}
	fillStatus(st, nil, errors.New("artifact sha256:abc: digest mismatch"))
	if phase.Phase(st.Phase) != phase.Failed {
		t.Errorf("phase = %q for a corrupt artifact; want Failed", st.Phase)
	}
}
