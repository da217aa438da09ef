package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flotilla/flotilla/internal/browsertest"
	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// pageLoad is what the browser measured for one cold load of the dashboard's matrix.
type pageLoad struct {
	// FirstPaint is first-contentful-paint; Matrix the mark the page sets when the matrix's
	// first page of rows is in the DOM; both in ms from navigation start.
	FirstPaint float64 `json:"firstPaint"`
	Matrix     float64 `json:"matrix"`
	// Transferred counts the bytes on the wire (headers included) of the page and everything
	// it fetched; Decoded the same bodies uncompressed.
	Transferred float64 `json:"transferred"`
	Decoded     float64 `json:"decoded"`
	Requests    int     `json:"requests"`
}

const measureJS = `(() => {
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const m = performance.getEntriesByName('flotilla:matrix-rendered')[0];
  if (!fcp || !m) return null;
  const all = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  return {
    firstPaint: fcp.startTime, matrix: m.startTime, requests: all.length,
    transferred: all.reduce((n, e) => n + e.transferSize, 0),
    decoded: all.reduce((n, e) => n + e.decodedBodySize, 0),
  };
})()`

// loadMatrix opens the dashboard's matrix in a fresh browser context (an empty cache, as on
// a first visit) and waits until its rows are rendered.
func loadMatrix(ctx context.Context, url string) (pageLoad, error) {
	tab, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		return pageLoad{}, err
	}
	return chromedp.Run(tab, chromedp.Poll[pageLoad](measureJS, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
}

// BenchmarkFirstPaint loads the dashboard's matrix cold (a fresh browser context: empty cache,
// as on a first visit) in headless Chromium against a real hub with a seeded fleet (hubtest:
// every assignment reported, 10% skewed, some failed, drifted, conflicted and unreachable),
// and reports per load:
//
//   - first-paint-ms: first contentful paint;
//   - matrix-ms: until the matrix's first page of rows is rendered;
//   - page-KiB: bytes transferred for the page and all it fetched (the fleet document
//     gzipped); decoded-KiB the same uncompressed;
//   - status-api-ms, the baseline: one GET /api/v1/status of the same fleet by the Go client
//     (what `flotilla status` fetches), and matrix/status-api, the ratio.
//
// document=shared loads while the hub still holds the fleet document another dashboard made
// (within dashboard.DefaultMaxAge, the usual case with any dashboard open); document=computed
// waits that out first, so the hub computes the document for this load. The small fleet
// (10 x 2) is a second baseline.
//
//	go test -run '^$' -bench FirstPaint -benchtime 3x ./internal/hub/dashboard
func BenchmarkFirstPaint(b *testing.B) {
	for _, size := range []struct{ clusters, releases int }{{10, 2}, {1000, 20}} {
		b.Run(fmt.Sprintf("clusters=%d/releases=%d", size.clusters, size.releases), func(b *testing.B) {
			f := hubtest.Start(b, hubtest.Options{Clusters: size.clusters, Releases: size.releases})
			spki, err := browsertest.ServerSPKI(b.Context(), f.APIURL, f.CAPath)
			if err != nil {
				b.Fatal(err)
			}
			browser := browsertest.Start(b, browsertest.Options{TrustSPKI: []string{spki}})
			client, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
			if err != nil {
				b.Fatal(err)
			}
			url := f.APIURL + "/#token=" + f.AdminToken + "&view=matrix"
			for _, mode := range []string{"shared", "computed"} {
				b.Run("document="+mode, func(b *testing.B) {
					// One load to warm the hub (SQLite pages, its caches) as a running hub
					// would be; the browser contexts measured are still cold.
					if _, err := loadMatrix(browser, url); err != nil {
						b.Fatal(err)
					}
					var sum pageLoad
					var status time.Duration
					for i := 0; i < b.N; i++ {
						if mode == "computed" {
							b.StopTimer()
							// Real time: the cache's max age passes, so the next page is computed.
							time.Sleep(dashboard.DefaultMaxAge + 100*time.Millisecond)
							b.StartTimer()
						}
						l, err := loadMatrix(browser, url)
						if err != nil {
							b.Fatal(err)
						}
						sum.FirstPaint += l.FirstPaint
						sum.Matrix += l.Matrix
						sum.Transferred += l.Transferred
						sum.Decoded += l.Decoded
						b.StopTimer()
						start := time.Now()
						st, err := client.Status(b.Context())
						if err != nil {
							b.Fatal(err)
						}
						status += time.Since(start)
						if len(st.Assignments) != size.clusters*size.releases {
							b.Fatalf("status has %d assignments, want %d", len(st.Assignments), size.clusters*size.releases)
						}
						b.StartTimer()
					}
					n := float64(b.N)
					b.ReportMetric(sum.FirstPaint/n, "first-paint-ms")
					b.ReportMetric(sum.Matrix/n, "matrix-ms")
					b.ReportMetric(sum.Transferred/n/1024, "page-KiB")
					b.ReportMetric(sum.Decoded/n/1024, "decoded-KiB")
					statusMS := float64(status.Microseconds()) / 1000 / n
					b.ReportMetric(statusMS, "status-api-ms")
					b.ReportMetric(sum.Matrix/n/statusMS, "matrix/status-api")
				})
			}
		})
	}
}
