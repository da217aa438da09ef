package store

import (
	"testing"
	"time"
)

func TestNullTimeScan(t *testing.T) {
	t.Parallel()
	instant := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tc := range []struct {
		name    string
		src     any
		want    nullTime
		wantErr bool
	}{
		{"SQLite nanoseconds", int64(1925089445000000006), nullTime{Time: instant, Valid: true}, false},
		{"SQLite 0 is the zero time, but a value", int64(0), nullTime{Valid: true}, false},
		{"PostgreSQL timestamp in another zone comes back as UTC", instant.In(time.FixedZone("UTC+2", 7200)), nullTime{Time: instant, Valid: true}, false},
		{"NULL is the zero time, not valid", nil, nullTime{}, false},
		{"text is refused", "2031-01-02", nullTime{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got nullTime
			err := got.Scan(tc.src)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Scan(%v) error = %v, want error %v", tc.src, err, tc.wantErr)
			}
			if got.Valid != tc.want.Valid || !got.Time.Equal(tc.want.Time) || got.Time.IsZero() != tc.want.Time.IsZero() {
				t.Errorf("Scan(%v) = %+v, want %+v", tc.src, got, tc.want)
			}
			if !got.Time.IsZero() && got.Time.Location() != time.UTC {
				t.Errorf("Scan(%v) is in %v, want UTC", tc.src, got.Time.Location())
			}
			var into time.Time
			if err := scanTime(&into).Scan(tc.src); (err != nil) != tc.wantErr {
				t.Fatalf("scanTime: Scan(%v) error = %v, want error %v", tc.src, err, tc.wantErr)
			}
			if !into.Equal(got.Time) || into.IsZero() != got.Time.IsZero() {
				t.Errorf("scanTime: Scan(%v) stored %v, want %v", tc.src, into, got.Time)
			}
		})
	}
}
