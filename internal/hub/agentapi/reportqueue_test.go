package agentapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// TestReportsWaitTheirTurn: a Report that finds every slot taken waits in the reports queue
// and is served when one frees, instead of being refused; other procedures never queue.
func TestReportsWaitTheirTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := NewMetrics()
		l := newLimiter(Options{MaxInflightReports: 1, MaxArtifactDownloads: 1, GlobalQPS: 1000, GlobalBurst: 1000, AgentQPS: 1000, AgentBurst: 1000},
			clock.NewFake(queueT0), slog.New(slog.DiscardHandler), m)
		served := 0
		h := l.limitReports(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
		call := func(path string) *httptest.ResponseRecorder {
			ctx := context.WithValue(t.Context(), clusterKey{}, "alpha")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, path, nil))
			return w
		}
		if away, err := l.reports.acquire(t.Context(), "busy"); away != nil || err != nil {
			t.Fatalf("taking the only report slot: %v, %v", away, err)
		}
		if w := call(agentv1connect.AgentServiceHeartbeatProcedure); w.Code != http.StatusOK || served != 1 {
			t.Fatalf("a heartbeat with every report slot taken: HTTP %d, served %d; want it served at once", w.Code, served)
		}
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- call(agentv1connect.AgentServiceReportProcedure) }()
		synctest.Wait()
		if got := testutil.ToFloat64(m.QueueWaiting.WithLabelValues("reports")); got != 1 {
			t.Fatalf("reports waiting = %v, want 1 (the report waits for the slot, not refused)", got)
		}
		l.reports.release()
		if w := <-done; w.Code != http.StatusOK || served != 2 {
			t.Errorf("the waiting report: HTTP %d, served %d; want it served once the slot freed", w.Code, served)
		}
	})
}
