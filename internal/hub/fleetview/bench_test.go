package fleetview

import (
	"fmt"
	"testing"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// fleet1000x20 is 1,000 clusters x 20 releases, one cluster in ten on an old revision.
func fleet1000x20() []hubclient.AssignmentView {
	out := make([]hubclient.AssignmentView, 0, 20000)
	for r := range 20 {
		for c := range 1000 {
			applied := "abc"
			if c%10 == 3 {
				applied = "old"
			}
			v := av(fmt.Sprintf("release-%02d", r), fmt.Sprintf("cluster-%04d", c), "abc", applied)
			v.Phase = hubclient.PhaseReady
			out = append(out, v)
		}
	}
	return out
}

// BenchmarkViews computes the per-release summary and the skew of 1,000 clusters x 20
// releases: the pure part of `flotilla status` and `flotilla skew`.
func BenchmarkViews(b *testing.B) {
	in := fleet1000x20()
	b.Run("Summarize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := Summarize(in); len(got) != 20 {
				b.Fatalf("%d releases", len(got))
			}
		}
	})
	b.Run("Skew", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := Skew(in); len(got) != 20 || got[0].Skewed != 100 {
				b.Fatalf("skew: %+v", got[0])
			}
		}
	})
}
