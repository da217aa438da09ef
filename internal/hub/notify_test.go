package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// hookReceiver is a real HTTP receiver of notifications: the bodies it got, by path.
type hookReceiver struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (rv *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
		return
	}
	rv.bodies[r.URL.Path] = append(rv.bodies[r.URL.Path], body)
	w.WriteHeader(http.StatusOK)
}

func (rv *hookReceiver) got(path string) [][]byte {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([][]byte(nil), rv.bodies[path]...)
}

// webhookEvent is what the test reads of the generic JSON body.
type webhookEvent struct {
	Type, Release, Cluster, Phase, DesiredRevision, AppliedRevision, Error string
	Cleared                                                                []string
}

type webhookMessage struct {
	Kind, Notification string
	Events             []webhookEvent
}

// TestNotifications runs a real hub on a Git source with one release and two notifications
// (a generic webhook with its URL in the fleet, a Slack one with its URL in a file on the hub)
// against a real HTTP receiver. The cluster reports as its agent would: the assignment fails,
// the hub restarts while it is failed, and it recovers. Each receiver gets exactly one
// "failed" and one "recovered": no repeat per evaluation, none after the restart.
func TestNotifications(t *testing.T) {
	rv := &hookReceiver{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	dir, repoDir, fleetDir := t.TempDir(), t.TempDir(), t.TempDir()
	commitFiles(t, repoDir, map[string][]byte{
		"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n"),
	})
	slackURLFile := filepath.Join(dir, "slack-url")
	if err := os.WriteFile(slackURLFile, []byte(srv.URL+"/slack/T000/B000/secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {matchLabels: {env: test}}}]
---
apiVersion: flotilla.dev/v1alpha1
kind: Notification
metadata: {name: ops-webhook}
spec:
  type: webhook
  url: %s/hook
  insecure: true
  releases: [web]
---
apiVersion: flotilla.dev/v1alpha1
kind: Notification
metadata: {name: ops-slack}
spec:
  type: slack
  urlFile: %s
  insecure: true
  events: [failed, recovered]
  clusterSelector: {matchLabels: {env: test}}
`, repoDir, srv.URL, slackURLFile)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts := Options{
		DataDir: filepath.Join(dir, "hub"), Fleet: fleetDir, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", FleetInterval: 200 * time.Millisecond,
		Notify: NotifyOptions{Interval: 50 * time.Millisecond},
	}

	th, stop := runHub(t, opts, st)
	h, api := th.Hub, th.api
	j, err := api.AddCluster(t.Context(), "echo", map[string]string{"env": "test"})
	if err != nil {
		t.Fatal(err)
	}
	joined, err := agent.Join(t.Context(), h.AgentURL(), j.JoinToken)
	if err != nil {
		t.Fatal(err)
	}
	client := func(h *Hub) agentv1connect.AgentServiceClient {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(h.ca.CertPEM())
		hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{joined.Certificate}}}}
		return agentv1connect.NewAgentServiceClient(hc, h.AgentURL())
	}
	ag := client(h)
	as := waitAssignment(t, ag)
	report := func(c agentv1connect.AgentServiceClient, seq uint64, phase, errMsg string) {
		t.Helper()
		_, err := c.Report(t.Context(), connect.NewRequest(&agentv1.ReportRequest{Reports: []*agentv1.Report{{
			// Objects: as a real agent reports it, the object whose apply failed among them.
			Seq: seq, Statuses: []*agentv1.AssignmentStatus{{Release: "web", Revision: as.GetRevision(), Digest: as.GetDigest(), Phase: phase, Error: errMsg, Objects: 1}},
		}}}))
		if err != nil {
			t.Fatal(err)
		}
	}
	waitBodies := func(path string, n int) [][]byte {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(rv.got(path)) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s received %d messages, want %d", path, len(rv.got(path)), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return rv.got(path)
	}
	const slackPath = "/slack/T000/B000/secret"

	report(ag, 1, "Failed", "Deployment/web/web apply failed: image missing")
	hooks := waitBodies("/hook", 1)
	var m webhookMessage
	if err := json.Unmarshal(hooks[0], &m); err != nil {
		t.Fatal(err)
	}
	want := webhookEvent{Type: "failed", Release: "web", Cluster: "echo", Phase: "Failed", DesiredRevision: as.GetRevision(), AppliedRevision: as.GetRevision(), Error: "Deployment/web/web apply failed: image missing"}
	if m.Kind != "FleetNotification" || m.Notification != "ops-webhook" || len(m.Events) != 1 || fmt.Sprint(m.Events[0]) != fmt.Sprint(want) {
		t.Fatalf("webhook message %s; want one event %+v", hooks[0], want)
	}
	slack := waitBodies(slackPath, 1)
	var sm struct{ Text string }
	if err := json.Unmarshal(slack[0], &sm); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sm.Text, ":red_circle: *failed*: release `web` on cluster `echo`: phase Failed") || !strings.Contains(sm.Text, "> Deployment/web/web apply failed: image missing") {
		t.Errorf("slack text %q", sm.Text)
	}

	// Restart while failed: the state on disk says "failed" was announced.
	stop()
	if _, err := os.Stat(filepath.Join(opts.DataDir, notifyStateFile)); err != nil {
		t.Fatalf("notification state not saved: %v", err)
	}
	th, _ = runHub(t, opts, st)
	h = th.Hub
	ag = client(h)
	waitEvaluations(t, h, 20) // many evaluations of a still-failed assignment
	if n, s := len(rv.got("/hook")), len(rv.got(slackPath)); n != 1 || s != 1 {
		t.Fatalf("after the restart: %d webhook and %d slack messages; want still 1 and 1", n, s)
	}

	report(ag, 2, "Ready", "")
	hooks = waitBodies("/hook", 2)
	m = webhookMessage{}
	if err := json.Unmarshal(hooks[1], &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Events) != 1 || m.Events[0].Type != "recovered" || m.Events[0].Phase != "Ready" || fmt.Sprint(m.Events[0].Cleared) != "[failed]" {
		t.Fatalf("second webhook message %s; want recovered, cleared [failed]", hooks[1])
	}
	slack = waitBodies(slackPath, 2)
	if err := json.Unmarshal(slack[1], &sm); err != nil {
		t.Fatal(err)
	}
	if want := ":white_check_mark: *recovered*: release `web` on cluster `echo`: back on " + shortRev(as.GetRevision()) + ", healthy (was failed)"; sm.Text != want {
		t.Errorf("slack text %q, want %q", sm.Text, want)
	}
	waitEvaluations(t, h, 20)
	if n, s := len(rv.got("/hook")), len(rv.got(slackPath)); n != 2 || s != 2 {
		t.Errorf("%d webhook and %d slack messages in the end; want 2 and 2", n, s)
	}
	metrics := scrape(h)
	for _, line := range []string{`flotilla_hub_notification_messages_total{notification="ops-webhook",outcome="sent"} 1`, `flotilla_hub_notification_messages_total{notification="ops-slack",outcome="sent"} 1`} {
		if !strings.Contains(metrics, line) {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// waitEvaluations waits until the hub's notifier has evaluated the fleet n more times: a
// repeated message would have been queued by then.
func waitEvaluations(t *testing.T, h *Hub, n int64) {
	t.Helper()
	target := h.notifier.evaluated.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for h.notifier.evaluated.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the notifier evaluated %d times in 30s, want %d", h.notifier.evaluated.Load()-target+n, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// shortRev is the revision as Slack lines show it: the commit cut to 12 digits.
func shortRev(rev string) string {
	prefix, sha, ok := strings.Cut(rev, "sha1:")
	if ok && len(sha) > 12 {
		return prefix + "sha1:" + sha[:12]
	}
	return rev
}

// waitAssignment watches the agent's desired state until it has an assignment with an
// artifact.
func waitAssignment(t *testing.T, c agentv1connect.AgentServiceClient) *agentv1.Assignment {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stream, err := c.Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for stream.Receive() {
		for _, as := range stream.Msg().GetDesired().GetAssignments() {
			if as.GetDigest() != "" {
				return as
			}
		}
	}
	t.Fatalf("no assignment with an artifact: %v", stream.Err())
	return nil
}

func TestAssignmentOf(t *testing.T) {
	seen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		v         hubapi.AssignmentView
		wantPhase hubapi.Phase
		wantSeen  time.Time
	}{
		{name: "reported phase kept", v: hubapi.AssignmentView{Phase: "Failed", ReportedPhase: "Failed", LastSeen: &seen, Reachable: true}, wantPhase: "Failed", wantSeen: seen},
		{name: "an unreachable cluster keeps its last reported phase", v: hubapi.AssignmentView{Phase: hubapi.PhaseUnreachable, ReportedPhase: "Failed", LastSeen: &seen}, wantPhase: "Failed", wantSeen: seen},
		{name: "unreachable before any report", v: hubapi.AssignmentView{Phase: hubapi.PhaseUnreachable, LastSeen: &seen}, wantPhase: hubapi.PhaseUnreachable, wantSeen: seen},
		{name: "never seen", v: hubapi.AssignmentView{Phase: hubapi.PhasePending}, wantPhase: hubapi.PhasePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assignmentOf(tt.v, map[string]string{"env": "prod"})
			if a.Phase != tt.wantPhase || !a.LastSeen.Equal(tt.wantSeen) || a.ClusterLabels["env"] != "prod" || a.Reachable != tt.v.Reachable {
				t.Errorf("assignmentOf = %+v; want phase %s, last seen %v", a, tt.wantPhase, tt.wantSeen)
			}
		})
	}
}
