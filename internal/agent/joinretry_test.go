package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// busyJoins is a hub's join endpoint that is busy for its first busy calls (resource_exhausted
// with a Retry-After, as the hub's join queue answers when it is full) and then lets the
// agent in; a call with a refused token gets permission_denied.
type busyJoins struct {
	agentv1connect.UnimplementedJoinServiceHandler
	ca    *pki.CA
	busy  int32
	calls atomic.Int32
}

func (j *busyJoins) Join(_ context.Context, req *connect.Request[agentv1.JoinRequest]) (*connect.Response[agentv1.JoinResponse], error) {
	if j.calls.Add(1) <= j.busy {
		err := connect.NewError(connect.CodeResourceExhausted, errors.New("hub busy: 4096 joins waiting, the most the hub queues; retry in 30s"))
		err.Meta().Set("Retry-After", "30")
		return nil, err
	}
	tok, err := pki.ParseJoinToken(req.Msg.GetToken())
	if err != nil {
		return nil, connect.NewError(connect.CodePermissionDenied, err)
	}
	cert, _, _, err := j.ca.SignAgentCSR(req.Msg.GetCsrPem(), tok.Cluster, time.Hour, time.Now())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return connect.NewResponse(&agentv1.JoinResponse{Cluster: tok.Cluster, CertificatePem: cert, CaPem: j.ca.CertPEM(), NextReportSeq: 1}), nil
}

// TestJoinWaitsWhileTheHubIsBusy: an agent whose join the hub turns away with Retry-After
// (a join storm) waits as told, on its clock, and joins; it does not give up.
func TestJoinWaitsWhileTheHubIsBusy(t *testing.T) {
	t.Parallel()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	joins := &busyJoins{ca: ca, busy: 2}
	mux := http.NewServeMux()
	mux.Handle(agentv1connect.NewJoinServiceHandler(joins))
	cert, err := ca.ServingCertificate([]string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tok, err := pki.NewJoinToken("alpha", ca.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}

	clk := clock.NewFake(time.Now())
	type result struct {
		a   *Agent
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := New(t.Context(), Options{StateDir: t.TempDir(), HubURL: srv.URL, JoinToken: tok.Encode(),
			RESTConfig: testCluster(t).RESTConfig(), Clock: clk, Logger: slog.New(slog.DiscardHandler)})
		done <- result{a, err}
	}()
	for waits := 0; ; waits++ {
		// Each turn ends with the agent joined, or turned away and waiting on its clock.
		var r *result
		eventually.Within(t, 30*time.Second, func() error {
			select {
			case res := <-done:
				r = &res
				return nil
			default:
			}
			if clk.Waiters() == 0 {
				return fmt.Errorf("after %d Retry-Afters and %d join calls, the agent neither joined nor waits on its clock", waits, joins.calls.Load())
			}
			return nil
		})
		if r == nil {
			clk.Advance(40 * time.Second) // past the Retry-After and its jitter
			continue
		}
		if r.err != nil {
			t.Fatalf("agent gave up joining a busy hub: %v", r.err)
		}
		t.Cleanup(func() { r.a.Close() })
		if got := joins.calls.Load(); got != 3 {
			t.Errorf("join calls = %d, want 3 (two turned away, then let in)", got)
		}
		if waits != 2 {
			t.Errorf("the agent waited out %d Retry-Afters, want 2", waits)
		}
		if r.a.id.Cluster != "alpha" {
			t.Errorf("joined as %q, want alpha", r.a.id.Cluster)
		}
		return
	}
}
