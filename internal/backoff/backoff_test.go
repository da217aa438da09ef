package backoff

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"
)

func TestStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{1, 2 * time.Second},
		{2, 4 * time.Second},
		{5, 32 * time.Second},
		{9, 5 * time.Minute}, // 512s capped at 300s
		{40, 5 * time.Minute},
		{0, 5 * time.Minute},
		{-1, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := Step(tt.attempt, 2*time.Second, 5*time.Minute); got != tt.want {
			t.Errorf("Step(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{1, 0, 500 * time.Millisecond},
		{1, 0.999999999, time.Second - time.Nanosecond},
		{2, 0, time.Second},
		{3, 0.5, 3 * time.Second},
		{7, 0, 30 * time.Second}, // 64s capped at 60s
		{7, 1, 60 * time.Second},
		{40, 0, 30 * time.Second}, // no overflow
		{0, 0, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempt %d jitter %v", tt.attempt, tt.jitter), func(t *testing.T) {
			t.Parallel()
			got := Delay(tt.attempt, time.Second, time.Minute, tt.jitter)
			if got.Round(time.Millisecond) != tt.want.Round(time.Millisecond) {
				t.Errorf("Backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d      time.Duration
		jitter float64
		want   time.Duration
	}{
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Second, 0.5, 5500 * time.Millisecond},
		{5 * time.Second, 0.999999, 6 * time.Second},
		{0, 0.7, 0},
	}
	for _, tt := range tests {
		if got := Spread(tt.d, 0.2, tt.jitter); got.Round(time.Millisecond) != tt.want {
			t.Errorf("Spread(%v, 0.2, %v) = %v, want %v", tt.d, tt.jitter, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		jitter float64
		want   []time.Duration // successive Next, then Reset, then one more Next
	}{
		{"no jitter: half of each step", 0, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond, 250 * time.Millisecond}},
		{"full jitter: the whole step", 1, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Backoff{Min: 500 * time.Millisecond, Max: 3 * time.Second, Jitter: func() float64 { return tt.jitter }}
			var got []time.Duration
			for range len(tt.want) - 1 {
				got = append(got, b.Next())
			}
			b.Reset()
			got = append(got, b.Next())
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("delays = %v, want %v", got, tt.want)
			}
		})
	}
	b := &Backoff{Min: time.Second, Max: time.Minute}
	for range 100 {
		if d := b.Next(); d < 500*time.Millisecond || d > time.Minute {
			t.Fatalf("Next = %v with the default jitter; want within [500ms, 1m]", d)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"-5", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.in, now); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 4 ", 4 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"9223372036854775807", time.Duration(math.MaxInt64), true},
		{"99999999999999999999", time.Duration(math.MaxInt64), true},
		{"-99999999999999999999", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"Mon, 30 Nov 2026 12:00", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
