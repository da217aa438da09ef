package window

import (
	"testing"
	"time"
)

// BenchmarkEvaluate measures a verdict with a few everyday gates (an allow window, a deny
// window open at the instant, a freeze), and with a window whose openings always overlap,
// the costliest schedule (the close is followed maxExtensions openings ahead).
func BenchmarkEvaluate(b *testing.B) {
	now := at("2026-07-04T10:00:00Z")
	for _, bc := range []struct {
		name  string
		gates []Gate
	}{
		{name: "everyday", gates: []Gate{
			allow("business-hours", "0 22 * * *", 4*time.Hour, "Europe/Berlin"),
			deny("weekend", "0 18 * * 5", 60*time.Hour, "Europe/Berlin"),
			{Name: "f", Kind: KindFreeze, Releases: []string{"db"}},
		}},
		{name: "always-open", gates: []Gate{deny("always", "* * * * *", 2*time.Minute, "")}},
		{name: "long", gates: []Gate{deny("december", "0 0 1 12 *", 31*24*time.Hour, "")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Evaluate(bc.gates, "web", now)
			}
		})
	}
}
