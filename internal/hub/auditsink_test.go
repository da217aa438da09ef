package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// scrape returns the hub's metrics in the text format.
func scrape(h *Hub) string {
	rec := httptest.NewRecorder()
	h.Metrics().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// sinkReceiver keeps the records of every batch it accepts; the first fail requests get 500.
type sinkReceiver struct {
	mu   sync.Mutex
	fail int
	got  []audit.Record
}

func (rv *sinkReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.fail > 0 {
		rv.fail--
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rv.got = append(rv.got, rec)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rv *sinkReceiver) records() []audit.Record {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return slices.Clone(rv.got)
}

// TestAuditSinkAcrossHubRestart runs a hub whose audit sink is down (connection refused):
// the metrics show the lag and the failures. The hub stops; the receiver comes up answering
// 500 at first; a new hub on the same data dir delivers what the first one recorded and what
// it records itself, every record once and in order.
func TestAuditSinkAcrossHubRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	opts := Options{
		DataDir: filepath.Join(dir, "hub"), Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		FleetInterval: 200 * time.Millisecond,
		AuditSink:     audit.SinkOptions{URL: "http://" + addr + "/ingest", PollInterval: 20 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	}

	th1, stop := runHub(t, opts, st)
	h1, api := th1.Hub, th1.api
	if _, err := api.AddCluster(t.Context(), "alpha", map[string]string{"env": "prod"}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 30*time.Second, func() error {
		if m := scrape(h1); !strings.Contains(m, `flotilla_hub_audit_sink_failures_total{reason="network"}`) || strings.Contains(m, "flotilla_hub_audit_sink_lag_records 0\n") {
			return fmt.Errorf("metrics show no lag and network failures yet:\n%s", m)
		}
		return nil
	})
	stop()

	rv := &sinkReceiver{fail: 2}
	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rv)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	th2, _ := runHub(t, opts, st)
	h2, api := th2.Hub, th2.api
	if _, err := api.AddCluster(t.Context(), "bravo", nil); err != nil {
		t.Fatal(err)
	}
	// The API call's own record is written after the answer: wait for it.
	eventually.Within(t, 30*time.Second, func() error {
		calls, err := h2.audit.List(t.Context(), audit.Filter{Action: "api.call"})
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 2 {
			return fmt.Errorf("the log holds %d api.call records, want 2 (one per AddCluster)", len(calls))
		}
		return nil
	})
	want, err := h2.audit.List(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 30*time.Second, func() error {
		if n := len(rv.records()); n < len(want) {
			return fmt.Errorf("receiver has %d of %d records", n, len(want))
		}
		return nil
	})
	got := rv.records()
	if len(got) != len(want) {
		t.Fatalf("receiver has %d records, the log %d", len(got), len(want))
	}
	var actions []string
	for i, r := range got {
		if r.Seq != want[i].Seq || r.Hash != want[i].Hash || r.Action != want[i].Action || r.Cluster != want[i].Cluster {
			t.Errorf("record %d: got seq %d %s %s, want seq %d %s %s", i, r.Seq, r.Action, r.Hash, want[i].Seq, want[i].Action, want[i].Hash)
		}
		actions = append(actions, r.Action+" "+r.Cluster)
	}
	for _, a := range []string{"cluster.added alpha", "token.issued alpha", "cluster.added bravo", "token.issued bravo"} {
		if !slices.Contains(actions, a) {
			t.Errorf("received %v; want %q among them", actions, a)
		}
	}
	eventually.Within(t, 10*time.Second, func() error {
		if m := scrape(h2); !strings.Contains(m, "flotilla_hub_audit_sink_lag_records 0\n") || !strings.Contains(m, `flotilla_hub_audit_sink_failures_total{reason="5xx"} 2`) {
			return fmt.Errorf("metrics after catching up; want lag 0 and two 5xx:\n%s", m)
		}
		return nil
	})
}
