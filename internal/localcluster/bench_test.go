package localcluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/localcluster"
)

// BenchmarkStart measures the time from Start to a ready API server for one cluster and for
// several started in parallel, and the resident memory of each cluster (etcd + kube-apiserver)
// once it is ready. Stopping is not timed.
//
//	go test -run '^$' -bench Start -benchtime 3x ./internal/localcluster
func BenchmarkStart(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			opts := make([]localcluster.Options, n)
			for i := range opts {
				opts[i].Name = fmt.Sprintf("bench-%d", i)
			}
			var rss int64
			for b.Loop() {
				clusters, err := localcluster.StartAll(b.Context(), opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				// Real time: let the API server finish its post-start work before reading
				// memory; what it settles to is what is measured, and it signals nothing.
				time.Sleep(2 * time.Second)
				for _, c := range clusters {
					r, err := c.ResidentBytes()
					if err != nil {
						b.Fatal(err)
					}
					rss += r
				}
				if err := localcluster.StopAll(clusters); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rss)/float64(b.N*n)/(1<<20), "MiB-rss/cluster")
		})
	}
}
