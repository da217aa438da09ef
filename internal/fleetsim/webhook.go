package fleetsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// WebhookReport compares sync on push with polling in the same run (runWebhookWave). Each
// sample is one cluster's time from a commit until that simulated cluster wrote its last
// changed object (every commit changes every object), measured in the simulator's process.
type WebhookReport struct {
	Clusters int `json:"clusters"`
	// SourceIntervalSeconds is the polling baseline's source interval.
	SourceIntervalSeconds float64 `json:"sourceIntervalSeconds"`
	// Rounds is the commits measured in each mode.
	Rounds int `json:"rounds"`
	// Polling and Webhook are the per-cluster times of every round of each mode.
	Polling Latencies `json:"polling"`
	Webhook Latencies `json:"webhook"`
	// P50Ratio and P99Ratio are webhook divided by polling (below 1: the webhook is faster).
	P50Ratio float64 `json:"p50Ratio"`
	P99Ratio float64 `json:"p99Ratio"`
	// Polled are the sources the hub said it polled for the delivery; DeliverySeconds the
	// delivery's round trip.
	Polled          []string `json:"polled"`
	DeliverySeconds float64  `json:"deliverySeconds"`
}

// Latencies summarize per-cluster convergence times, in seconds.
type Latencies struct {
	P50 float64 `json:"p50Seconds"`
	P99 float64 `json:"p99Seconds"`
	Max float64 `json:"maxSeconds"`
	// Samples is clusters x rounds.
	Samples int `json:"samples"`
}

// webhookSetup writes a random secret for the hub's generic webhook and returns the hub
// flag that reads it, and the secret.
func webhookSetup(dir string) (flag []string, secret string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, "", err
	}
	secret = hex.EncodeToString(b)
	file := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		return nil, "", fmt.Errorf("fleet simulator: write webhook secret: %w", err)
	}
	return []string{"--webhook-secret-file", "generic=" + file}, secret, nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// raiseSourceInterval rewrites the fleet configuration with the source polled every hour,
// and waits until the hub has it in force: from then on only a webhook moves the source.
func raiseSourceInterval(ctx context.Context, api *hubclient.Client, src *fleetSource, timeout time.Duration) error {
	before, err := api.Status(ctx)
	if err != nil {
		return err
	}
	if err := src.writeFleet(time.Hour); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		st, err := api.Status(ctx)
		if err == nil && st.Fleet.Revision != before.Fleet.Revision {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the hub did not take the fleet configuration with the hour-long source interval: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// deliverPush posts a signed generic push of the source's main branch to the hub.
func deliverPush(ctx context.Context, hub *hubProc, src *fleetSource, secret string) ([]string, error) {
	pem, err := os.ReadFile(filepath.Join(hub.dataDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body, err := json.Marshal(map[string]string{"url": "file://" + src.repoDir, "branch": "main"})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+hub.apiAddr+"/hooks/generic", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.GenericSignature, webhook.SignatureHeader(body, secret))
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("deliver the webhook: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("deliver the webhook: %s: %s", resp.Status, data)
	}
	var out struct {
		Polled []string `json:"polled"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("deliver the webhook: answer %s: %w", data, err)
	}
	if len(out.Polled) == 0 {
		return nil, fmt.Errorf("deliver the webhook: the hub polled no source: %s", data)
	}
	return out.Polled, nil
}

// runWebhookWave measures sync on push against polling, with Options.WebhookRounds commits
// in each mode after wave 2, each waited for until every simulated cluster wrote every object
// of it. Polling's latency depends on where in the source's interval the commit falls, so each
// polling commit is made at a random point of it; then the source's interval is raised to an
// hour and each commit is followed at once by a signed push to the generic webhook.
// Revisions continue from rev.
func runWebhookWave(ctx context.Context, opts Options, src *fleetSource, hub *hubProc, api *hubclient.Client, clusters []*MemCluster, rev int, secret string) (*WebhookReport, error) {
	h := &WebhookReport{Clusters: opts.Clusters, Rounds: opts.WebhookRounds, SourceIntervalSeconds: opts.SourceInterval.Seconds()}
	var polling, pushed []float64
	for i := range opts.WebhookRounds {
		phase := time.Duration(mrand.Int64N(int64(opts.SourceInterval)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(phase):
		}
		secs, err := commitRound(ctx, opts, src, clusters, rev, nil)
		if err != nil {
			return nil, fmt.Errorf("polling round %d: %w", i+1, err)
		}
		polling = append(polling, secs...)
		rev++
	}
	if err := raiseSourceInterval(ctx, api, src, opts.Timeout); err != nil {
		return nil, err
	}
	for i := range opts.WebhookRounds {
		secs, err := commitRound(ctx, opts, src, clusters, rev, func() error {
			start := time.Now()
			polled, err := deliverPush(ctx, hub, src, secret)
			h.Polled, h.DeliverySeconds = polled, max(h.DeliverySeconds, time.Since(start).Seconds())
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("webhook round %d: %w", i+1, err)
		}
		pushed = append(pushed, secs...)
		rev++
	}
	h.Polling, h.Webhook = summarize(polling), summarize(pushed)
	h.P50Ratio, h.P99Ratio = ratio(h.Webhook.P50, h.Polling.P50), ratio(h.Webhook.P99, h.Polling.P99)
	opts.Logger.Info("webhook rounds done", "p50", h.Webhook.P50, "p99", h.Webhook.P99, "polling p50", h.Polling.P50, "polling p99", h.Polling.P99)
	return h, nil
}

// commitRound commits revision rev, calls after (the webhook's delivery) if set, and waits
// until every cluster wrote every object again; it returns each cluster's seconds from the
// commit to its last write.
func commitRound(ctx context.Context, opts Options, src *fleetSource, clusters []*MemCluster, rev int, after func() error) ([]float64, error) {
	before := make([]int64, len(clusters))
	for i, mc := range clusters {
		before[i] = mc.Counts().Writes
	}
	if _, err := src.commit(ctx, rev); err != nil {
		return nil, err
	}
	committed := time.Now()
	if after != nil {
		if err := after(); err != nil {
			return nil, err
		}
	}
	want := int64(opts.Releases * opts.Objects)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	for {
		done := 0
		for i, mc := range clusters {
			if mc.Counts().Writes-before[i] >= want {
				done++
			}
		}
		if done == len(clusters) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d clusters wrote revision %d: %w", done, len(clusters), rev, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	secs := make([]float64, len(clusters))
	for i, mc := range clusters {
		secs[i] = mc.LastWrite().Sub(committed).Seconds()
	}
	l := summarize(secs)
	opts.Logger.Info("commit converged at every cluster", "revision", rev, "webhook", after != nil, "p50", l.P50, "max", l.Max)
	return secs, nil
}

// summarize gives the percentiles of samples.
func summarize(samples []float64) Latencies {
	s := slices.Clone(samples)
	slices.Sort(s)
	if len(s) == 0 {
		return Latencies{}
	}
	return Latencies{P50: percentile(s, 0.50), P99: percentile(s, 0.99), Max: s[len(s)-1], Samples: len(s)}
}

func (h *WebhookReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\ncommit -> cluster converged (last object written at the simulated cluster), %d clusters x %d commits per mode\n", h.Clusters, h.Rounds)
	fmt.Fprintf(w, "  polling (source interval %gs, commits at random points of it):  p50 %.2f s  p99 %.2f s  max %.2f s\n", h.SourceIntervalSeconds, h.Polling.P50, h.Polling.P99, h.Polling.Max)
	fmt.Fprintf(w, "  webhook (source interval 1h, push delivered at once):           p50 %.2f s  p99 %.2f s  max %.2f s  (delivery <= %.3f s, polled %v)\n",
		h.Webhook.P50, h.Webhook.P99, h.Webhook.Max, h.DeliverySeconds, h.Polled)
	fmt.Fprintf(w, "  webhook / polling:  p50 %.3f  p99 %.3f\n", h.P50Ratio, h.P99Ratio)
}
