package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	m.observeStatus(&agentv1.AssignmentStatus{Release: "web", Phase: "Ready", Objects: 12, DurationSeconds: 0.3,
		Drift: []*agentv1.DriftedObject{{Object: "deployment.apps/web", Healed: true}}})
	m.observeStatus(&agentv1.AssignmentStatus{Release: "db", Phase: "Failed", Objects: 3})
	m.setOutbox(4)
	m.setConnected(true)
	m.setGeneration(7)
	m.refused(9)
	out := scrape(t, m)
	for _, want := range []string{
		`flotilla_agent_objects{release="web"} 12`,
		`flotilla_agent_drifted_objects{release="web"} 1`,
		`flotilla_agent_reconciles_total{phase="Failed",release="db"} 1`,
		`flotilla_agent_reconcile_duration_seconds_count{release="web"} 1`,
		`flotilla_agent_outbox_depth 4`,
		`flotilla_agent_hub_connected 1`,
		`flotilla_agent_desired_generation 7`,
		`flotilla_agent_desired_refused_generation 9`,
		`flotilla_agent_desired_refused_total 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	// A release that left the cluster leaves no series behind: labels stay bounded.
	m.forget("db")
	if out := scrape(t, m); strings.Contains(out, `release="db"`) {
		t.Errorf("series of a removed release remain:\n%s", out)
	}
	// An agent without metrics records nothing and does not panic.
	var none *Metrics
	none.observeStatus(&agentv1.AssignmentStatus{Release: "x"})
	none.setOutbox(1)
	none.refused(3)
}
