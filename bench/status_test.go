package bench

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// BenchmarkStatus measures `flotilla status` on a hub holding 1,000 clusters x 20 releases
// of stored status (hubtest.Start: a real hub, SQLite, one seeded report per assignment).
// Sub-benchmarks, each reported in ms/op:
//
//   - store-baseline: reading every stored status from the store (store.ListStatuses), the
//     least any status view has to do;
//   - api: GET /api/v1/status alone (hubclient.Client.Status: TLS, JSON of 20,000 assignments,
//     decoding) with x-baseline, its ratio to store-baseline;
//   - cli-table and cli-json: the real flotilla binary, as a user runs it (process start,
//     connection, the API call, printing), with x-api, the ratio to the API call alone.
//
// Run it with
//
//	go test -run '^$' -bench Status -benchtime 5x ./bench
func BenchmarkStatus(b *testing.B) {
	start := time.Now()
	f := hubtest.Start(b, hubtest.Options{Clusters: 1000, Releases: 20})
	b.Logf("hubtest.Start with 1,000 clusters x 20 releases took %s", time.Since(start).Round(10*time.Millisecond))
	flotilla := buildFlotilla(b)
	client, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		b.Fatal(err)
	}
	var baseline, api time.Duration
	b.Run("store-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st, err := f.Store.ListStatuses(b.Context())
			if err != nil || len(st) != 20000 {
				b.Fatalf("ListStatuses: %d statuses, %v", len(st), err)
			}
		}
		baseline = b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(ms(baseline), "ms/op")
	})
	b.Run("api", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := client.Status(b.Context())
			if err != nil || len(v.Assignments) != 20000 || len(v.Releases) != 20 {
				b.Fatalf("status: %d assignments, %d releases, %v", len(v.Assignments), len(v.Releases), err)
			}
		}
		api = b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(ms(api), "ms/op")
		if baseline > 0 {
			b.ReportMetric(float64(api)/float64(baseline), "x-baseline")
		}
	})
	for _, format := range []string{"table", "json"} {
		b.Run("cli-"+format, func(b *testing.B) {
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				cmd := exec.CommandContext(context.Background(), flotilla, "status", "-o", format, "--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath)
				cmd.Stdout = &out
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("flotilla status -o %s: %v\n%s", format, err, stderr.String())
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(ms(per), "ms/op")
			b.ReportMetric(float64(out.Len())/1024, "output-KiB")
			if api > 0 {
				b.ReportMetric(float64(per)/float64(api), "x-api")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
