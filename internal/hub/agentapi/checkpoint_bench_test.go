package agentapi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// The idle fleet of the measure: 1,000 clusters x 20 releases, every assignment checked every
// 10 minutes, nothing changing.
const (
	idleFleetClusters = 1000
	idleReleases      = 20
	idleInterval      = 10 * time.Minute
)

// sampleClusters is how many clusters the benchmark runs for real, through the agent
// endpoint's Report, the SQLite store and the audit log, over one simulated day. Assignments
// are independent of each other in the audit trail (a record or checkpoint concerns one), so
// the fleet's bytes are the sample's times idleFleetClusters/sampleClusters.
const sampleClusters = 2

// BenchmarkAuditBytesPerDay measures the audit trail an idle fleet writes in a day, before
// checkpoints (every check a full apply record: AuditCheckpoint < 0) and with them (the
// default 1h, and 24h), in one run. Each op is one simulated day of sampleClusters x idleReleases
// assignments on a fake clock, after a first day that made every assignment's first,
// full record; the bytes are the records as ExportJSONL writes them (what the audit sink
// ships and an archive keeps), scaled to the whole fleet:
//
//	go test -run '^$' -bench AuditBytesPerDay -benchtime 1x ./internal/hub/agentapi
func BenchmarkAuditBytesPerDay(b *testing.B) {
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"every-check-a-record", -1}, {"checkpoint-1h", audit.DefaultCheckpointInterval}, {"checkpoint-24h", 24 * time.Hour}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			clusters := make([]string, sampleClusters)
			for i := range clusters {
				clusters[i] = fmt.Sprintf("cluster-%04d", i)
			}
			releases := make([]string, idleReleases)
			for j := range releases {
				releases[j] = fmt.Sprintf("release-%02d", j)
			}
			h := newAuditFleet(b, stores[0].open, mode.every, clusters, releases)
			statuses := make(map[string]*agentv1.AssignmentStatus, len(releases))
			for j, r := range releases {
				rev := fmt.Sprintf("%040x", j+1)
				statuses[r] = &agentv1.AssignmentStatus{
					Release: r, Generation: 1, Revision: "main@sha1:" + rev, Digest: "sha256:" + strings.Repeat(rev[:32], 2),
					Phase: "Ready", Health: "Current", Objects: 12, DurationSeconds: 0.4,
				}
			}
			day := func() {
				for range int(24 * time.Hour / idleInterval) {
					h.clock.Advance(idleInterval)
					for _, c := range clusters {
						for _, r := range releases {
							h.send(c, statuses[r])
						}
					}
				}
			}
			day() // every assignment's first record, and a steady state
			var bytesPerDay, recordsPerDay float64
			b.ResetTimer()
			for range b.N {
				start := h.clock.Now()
				day()
				var buf bytes.Buffer
				if err := h.log.ExportJSONL(b.Context(), &buf, audit.Filter{Since: start.Add(time.Nanosecond)}); err != nil {
					b.Fatal(err)
				}
				bytesPerDay += float64(buf.Len())
				recordsPerDay += float64(bytes.Count(buf.Bytes(), []byte{'\n'}))
			}
			b.StopTimer()
			if n, err := h.log.Verify(b.Context()); err != nil {
				b.Fatalf("verify after %d records: %v", n, err)
			}
			scale := float64(idleFleetClusters) / sampleClusters
			b.ReportMetric(bytesPerDay/float64(b.N)*scale, "fleet-audit-bytes/day")
			b.ReportMetric(recordsPerDay/float64(b.N)*scale, "fleet-records/day")
			b.ReportMetric(0, "ns/op") // one op is a simulated day: its wall time says nothing
		})
	}
}
