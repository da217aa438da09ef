package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/procstat"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// BenchmarkReportStorm runs the hub as its own process (the real binary, default limits, an
// empty fleet), registers and joins 1,000 clusters, then has all 1,000 "agents" (goroutines,
// each with its own mTLS connection) send 20 reports of 10 statuses each as fast as the hub
// lets them, one request at a time per agent, honouring Retry-After when the hub sheds load.
// It reports:
//
//   - hub-peak-MiB: the hub's peak resident memory (VmHWM); hub-idle-MiB the same just before
//     the storm, with the 1,000 agents connected;
//   - sent, acked, ingested: Report requests made (refused ones included), reports the hub
//     acked, and distinct reports in the hub's store (read after it stopped);
//   - exhausted: requests refused with resource_exhausted; other-errors: any other failure;
//   - storm-s, acked/s: wall time of the storm and reports acked per second;
//   - p99-accepted-ms: latency of the Report calls that were accepted.
//
// The agents run in the benchmark's process, on the same cores as the hub. Run it with
//
//	go test -run '^$' -bench ReportStorm -benchtime 1x ./bench
func BenchmarkReportStorm(b *testing.B) {
	flotilla := buildFlotilla(b)
	for b.Loop() {
		runReportStorm(b, flotilla)
	}
}

const (
	stormAgents     = 1000
	stormReports    = 20 // per agent
	stormStatuses   = 10 // per report
	stormMaxAttempt = 100
)

type stormAgent struct {
	name   string
	http   *http.Client
	client agentv1connect.AgentServiceClient
}

type stormCounts struct {
	sent, acked, exhausted, other, gaveUp atomic.Int64
	mu                                    sync.Mutex
	latencies                             []time.Duration
}

func runReportStorm(b *testing.B, flotilla string) {
	ctx := b.Context()
	dir := b.TempDir()
	hubDir, fleetDir := filepath.Join(dir, "hub"), filepath.Join(dir, "fleet")
	if err := os.MkdirAll(fleetDir, 0o755); err != nil {
		b.Fatal(err)
	}
	hubCmd := exec.Command(flotilla, "hub", "--data-dir", hubDir, "--fleet", fleetDir,
		"--agent-addr", "127.0.0.1:0", "--api-addr", "127.0.0.1:0", "--log-level", "warn")
	stderr, err := hubCmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := hubCmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopHub := sync.OnceValue(func() error {
		_ = hubCmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- hubCmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			_ = hubCmd.Process.Kill()
			return fmt.Errorf("hub did not stop within 20s of SIGINT; killed (%v)", <-done)
		}
	})
	defer func() { _ = stopHub() }() // once: the check below reports its error; this covers the early returns
	agentURL, apiURL := readHubAddresses(b, stderr)
	caPEM, err := os.ReadFile(filepath.Join(hubDir, "ca.crt"))
	if err != nil {
		b.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(hubDir, "admin.token"))
	if err != nil {
		b.Fatal(err)
	}
	api, err := hubclient.NewClient(hubclient.Config{Hub: apiURL, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(hubDir, "ca.crt")})
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)

	setupStart := time.Now()
	agents := joinStormAgents(b, api, agentURL, pool)
	defer func() {
		for _, a := range agents {
			a.http.CloseIdleConnections()
		}
	}()
	b.Logf("registered and joined %d clusters in %.1fs", len(agents), time.Since(setupStart).Seconds())
	// Connect every agent first (a heartbeat each), so that the idle figure includes 1,000
	// open connections and the storm measures reports, not TLS handshakes.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, a := range agents {
		g.Go(func() error {
			_, err := a.client.Heartbeat(gctx, connect.NewRequest(&agentv1.HeartbeatRequest{}))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("connect agents: %v", err)
	}
	idle, err := procstat.Bytes(hubCmd.Process.Pid, procstat.Peak)
	if err != nil {
		b.Fatal(err)
	}

	var counts stormCounts
	stormCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() { a.storm(stormCtx, &counts) })
	}
	wg.Wait()
	wall := time.Since(start)
	peak, err := procstat.Bytes(hubCmd.Process.Pid, procstat.Peak)
	if err != nil {
		b.Fatal(err)
	}

	for _, a := range agents {
		a.http.CloseIdleConnections()
	}
	if err := stopHub(); err != nil {
		b.Logf("hub exit: %v", err)
	}
	ingested := countIngested(b, filepath.Join(hubDir, "hub.db"), agents)

	slices.Sort(counts.latencies)
	p99 := time.Duration(0)
	if n := len(counts.latencies); n > 0 {
		p99 = counts.latencies[n*99/100]
	}
	acked := counts.acked.Load()
	b.ReportMetric(float64(peak)/(1<<20), "hub-peak-MiB")
	b.ReportMetric(float64(idle)/(1<<20), "hub-idle-MiB")
	b.ReportMetric(float64(counts.sent.Load()), "sent")
	b.ReportMetric(float64(acked), "acked")
	b.ReportMetric(float64(ingested), "ingested")
	b.ReportMetric(float64(counts.exhausted.Load()), "exhausted")
	b.ReportMetric(float64(counts.other.Load()), "other-errors")
	b.ReportMetric(wall.Seconds(), "storm-s")
	b.ReportMetric(float64(acked)/wall.Seconds(), "acked/s")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-accepted-ms")
	want := int64(stormAgents * stormReports)
	if acked != want || ingested != want || counts.gaveUp.Load() > 0 {
		b.Errorf("acked %d, ingested %d of %d reports; %d agents gave up", acked, ingested, want, counts.gaveUp.Load())
	}
}

// joinStormAgents registers the clusters through the user API and joins each with its own key,
// as an agent's first start does; every agent gets its own HTTP transport (connection).
func joinStormAgents(b *testing.B, api *hubclient.Client, agentURL string, pool *x509.CertPool) []*stormAgent {
	b.Helper()
	agents := make([]*stormAgent, stormAgents)
	g, ctx := errgroup.WithContext(b.Context())
	g.SetLimit(8)
	for i := range agents {
		g.Go(func() error {
			name := fmt.Sprintf("storm-%04d", i)
			j, err := api.AddCluster(ctx, name, map[string]string{"env": "bench"})
			if err != nil {
				return fmt.Errorf("cluster %s: add: %w", name, err)
			}
			joined, err := agent.Join(ctx, agentURL, j.JoinToken)
			if err != nil {
				return fmt.Errorf("cluster %s: join: %w", name, err)
			}
			cert := joined.Certificate
			hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
			agents[i] = &stormAgent{name: name, http: hc, client: agentv1connect.NewAgentServiceClient(hc, agentURL)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return agents
}

// storm sends the agent's reports in seq order, each until acked: after a refusal it waits
// the Retry-After plus up to 20% (as agents do), after another error half a second.
func (a *stormAgent) storm(ctx context.Context, counts *stormCounts) {
	for seq := uint64(1); seq <= stormReports; seq++ {
		req := &agentv1.ReportRequest{Reports: []*agentv1.Report{stormReport(seq)}}
		for attempt := 1; ; attempt++ {
			if ctx.Err() != nil || attempt > stormMaxAttempt {
				counts.gaveUp.Add(1)
				return
			}
			counts.sent.Add(1)
			start := time.Now()
			resp, err := a.client.Report(ctx, connect.NewRequest(req))
			if err == nil {
				took := time.Since(start)
				counts.acked.Add(int64(len(resp.Msg.GetAcked())))
				counts.mu.Lock()
				counts.latencies = append(counts.latencies, took)
				counts.mu.Unlock()
				break
			}
			wait := 500 * time.Millisecond
			var ce *connect.Error
			if errors.As(err, &ce) && ce.Code() == connect.CodeResourceExhausted {
				counts.exhausted.Add(1)
				if secs, perr := strconv.Atoi(ce.Meta().Get("Retry-After")); perr == nil {
					wait = time.Duration(secs) * time.Second
				}
			} else {
				counts.other.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait + rand.N(wait/5+1)):
			}
		}
	}
}

// stormReport is one reconcile's worth of status for ten releases: roughly 3 KB on the wire.
func stormReport(seq uint64) *agentv1.Report {
	r := &agentv1.Report{Seq: seq, ProducedAt: timestamppb.Now()}
	for i := range stormStatuses {
		r.Statuses = append(r.Statuses, &agentv1.AssignmentStatus{
			Release:    fmt.Sprintf("platform-%02d", i),
			Generation: int64(seq),
			Revision:   "main@sha1:4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
			Digest:     "sha256:9b2e4f6a8c0d1e3f5a7b9c2d4e6f8a0b1c3d5e7f9a2b4c6d8e0f1a3b5c7d9e1f",
			Phase:      "Ready", Health: "Current",
			Objects: 42, Configured: 3,
			Drift: []*agentv1.DriftedObject{{
				Object: "deployment.apps/web", Namespace: "platform-system",
				Paths: []string{".spec.replicas", ".spec.template.spec.containers[name=web].image"}, Healed: true,
			}},
			DurationSeconds: 1.25,
		})
	}
	return r
}

// countIngested opens the stopped hub's store and counts the distinct reports it ingested.
func countIngested(b *testing.B, dbPath string, agents []*stormAgent) int64 {
	b.Helper()
	st, err := store.OpenSQLite(b.Context(), dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var total int64
	for _, a := range agents {
		n, err := st.ReportsIngested(b.Context(), a.name)
		if err != nil {
			b.Fatalf("cluster %s: %v", a.name, err)
		}
		total += n
	}
	return total
}
