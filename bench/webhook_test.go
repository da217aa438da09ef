//go:build bench

package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/fleetsim"
)

// TestFleetSimulatorWebhook runs the webhook mode on a small fleet and checks what a reader of
// its report relies on: the hub polled the source for each signed push, every cluster
// converged on every commit of both modes (one sample per cluster and commit), and the table
// gives both modes and their ratio. 25 clusters are more than the hub's default join burst
// from one address (20), which every simulated agent shares. The figures themselves come from
// `flotilla-bench fleet --clusters 100 --webhook` (docs/webhooks.md).
func TestFleetSimulatorWebhook(t *testing.T) {
	t.Parallel()
	const clusters, rounds = 25, 2
	rep, err := fleetsim.Run(t.Context(), fleetsim.Options{
		Binary: buildCmd(t, "flotilla-bench"), Dir: t.TempDir(),
		Clusters: clusters, Releases: 2, Objects: 3, Webhook: true, WebhookRounds: rounds,
		SourceInterval: 2 * time.Second, PollInterval: 200 * time.Millisecond, Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := rep.Webhook
	if h == nil {
		t.Fatal("no webhook report")
	}
	if !slices.Equal(h.Polled, []string{"apps"}) {
		t.Errorf("the webhook polled %v, want [apps]", h.Polled)
	}
	for mode, l := range map[string]fleetsim.Latencies{"polling": h.Polling, "webhook": h.Webhook} {
		if l.Samples != clusters*rounds || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("%s: %+v, want %d samples with 0 < p50 <= p99 <= max", mode, l, clusters*rounds)
		}
	}
	if len(rep.Push) != 0 {
		t.Errorf("the webhook mode ran the push baseline: %d waves", len(rep.Push))
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"polling (source interval 2s", "webhook (source interval 1h", "webhook / polling:", "polled [apps]"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}
