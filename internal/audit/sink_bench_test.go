package audit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkSinkStream streams 10,000 apply records to a real HTTP receiver on loopback
// (JSON Lines, default batches), against the baseline of exporting the same records as JSON
// Lines to io.Discard: the cost of HTTP and of the cursor on top of reading and encoding.
func BenchmarkSinkStream(b *testing.B) {
	const n = 10000
	l, _ := openTest(b)
	ctx := context.Background()
	for i := range n {
		if _, err := l.Append(ctx, applyEvent(i)); err != nil {
			b.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	report := func(b *testing.B) {
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("baseline=export", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := l.ExportJSONL(ctx, io.Discard, Filter{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("sink", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			// A URL of its own, so the cursor starts at 0 every time.
			s, err := NewSink(ctx, l, SinkOptions{URL: fmt.Sprintf("%s/%d", srv.URL, i)})
			if err != nil {
				b.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			s.opts.Observe = func(a SinkAttempt) {
				if a.Err != nil {
					b.Error(a.Err)
				}
				if a.LastSeq == n {
					cancel()
				}
			}
			_ = s.Run(runCtx)
			if s.Cursor() != n {
				b.Fatalf("cursor %d after the run; want %d", s.Cursor(), n)
			}
		}
		report(b)
	})
}
