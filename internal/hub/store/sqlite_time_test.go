package store

import (
	"math"
	"testing"
	"time"
)

func TestTimeEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    time.Time
		nanos int64
		out   time.Time // what comes back
	}{
		{"zero is 0", time.Time{}, 0, time.Time{}},
		{"an instant keeps its nanoseconds", time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC), 1925089445000000006, time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)},
		{"another zone comes back as UTC", time.Date(2031, 1, 2, 5, 4, 5, 6, time.FixedZone("UTC+2", 7200)), 1925089445000000006, time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)},
		{"before 1970 is negative", time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), -1e9, time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"after 2262 is clamped", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64, time.Unix(0, math.MaxInt64).UTC()},
		{"before 1678 is clamped", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64, time.Unix(0, math.MinInt64).UTC()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := toNanos(tc.in)
			if n != tc.nanos {
				t.Errorf("toNanos(%v) = %d, want %d", tc.in, n, tc.nanos)
			}
			out := fromNanos(n)
			if !out.Equal(tc.out) || out.IsZero() != tc.out.IsZero() {
				t.Errorf("fromNanos(%d) = %v, want %v", n, out, tc.out)
			}
			if !out.IsZero() && out.Location() != time.UTC {
				t.Errorf("fromNanos(%d) is in %v, want UTC", n, out.Location())
			}
		})
	}
}
