package backoff

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
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
			got := Delay(tt.attempt, time.Second, time.Minute, tt.jitter)
			if got.Round(time.Millisecond) != tt.want.Round(time.Millisecond) {
				t.Errorf("Backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
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
