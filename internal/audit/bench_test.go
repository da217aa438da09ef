package audit

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// applyEvent is a typical apply record: what the hub writes for every status an agent reports.
func applyEvent(i int) Event {
	return Event{
		Time: t0.Add(time.Duration(i) * time.Second), Actor: fmt.Sprintf("agent:eu-prod-%03d", i%500), Action: "apply",
		Cluster: fmt.Sprintf("eu-prod-%03d", i%500), Release: "baseline",
		Detail: map[string]any{
			"revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
			"digest":   "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"url":      "https://git.example.com/platform.git", "generation": 42, "reportSeq": i,
			"phase": "Ready", "health": "Current", "objects": 12, "created": 0, "configured": 1, "pruned": 0,
		},
	}
}

func BenchmarkAppend(b *testing.B) {
	l, _ := openTest(b)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Append(ctx, applyEvent(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSizePer1000Applies reports the audit file's growth per 1,000 apply records,
// indexes and WAL checkpointed in.
func BenchmarkSizePer1000Applies(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		l, path := openTest(b)
		size := func() int64 {
			if _, err := l.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				b.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return st.Size()
		}
		before := size()
		b.StartTimer()
		for i := range 1000 {
			if _, err := l.Append(ctx, applyEvent(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(size()-before), "bytes/1000applies")
		l.Close()
		b.StartTimer()
	}
}
