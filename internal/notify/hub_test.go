package notify_test

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

	"github.com/flotilla/flotilla/internal/hub/agentapi/agentapitest"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/notify"
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
	t.Parallel()
	rv := &hookReceiver{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	dir, repoDir, fleetDir := t.TempDir(), t.TempDir(), t.TempDir()
	gittest.CommitFiles(t, repoDir, map[string][]byte{
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
	opts := hub.Options{
		DataDir: filepath.Join(dir, "hub"), Fleet: fleetDir, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", FleetInterval: 200 * time.Millisecond,
		Notify: notify.Options{Interval: 50 * time.Millisecond},
	}

	h, stop := runHub(t, opts, st)
	api, err := hubclient.NewClient(hubclient.Config{Hub: h.APIURL(), Token: h.AdminToken(), CAFile: h.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	j, err := api.AddCluster(t.Context(), "echo", map[string]string{"env": "test"})
	if err != nil {
		t.Fatal(err)
	}
	joined, err := agent.Join(t.Context(), h.AgentURL(), j.JoinToken)
	if err != nil {
		t.Fatal(err)
	}
	client := func(h *hub.Hub) agentv1connect.AgentServiceClient {
		caPEM, err := os.ReadFile(h.CAPath())
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{joined.Certificate}}}}
		return agentv1connect.NewAgentServiceClient(hc, h.AgentURL())
	}
	ag := client(h)
	as := agentapitest.WaitAssignment(t, ag)
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
		eventually.Within(t, 30*time.Second, func() error {
			if got := len(rv.got(path)); got < n {
				return fmt.Errorf("%s received %d messages, want %d", path, got, n)
			}
			return nil
		})
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
	if _, err := os.Stat(filepath.Join(opts.DataDir, hub.NotifyStateFile)); err != nil {
		t.Fatalf("notification state not saved: %v", err)
	}
	h, _ = runHub(t, opts, st)
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
func waitEvaluations(t *testing.T, h *hub.Hub, n int64) {
	t.Helper()
	target := h.NotifyEvaluations() + n
	eventually.Within(t, 30*time.Second, func() error {
		if got := h.NotifyEvaluations(); got < target {
			return fmt.Errorf("the hub evaluated its notifications %d more times, want %d", got-target+n, n)
		}
		return nil
	})
}

// shortRev is the revision as Slack lines show it: the commit cut to 12 digits.
func shortRev(rev string) string {
	prefix, sha, ok := strings.Cut(rev, "sha1:")
	if ok && len(sha) > 12 {
		return prefix + "sha1:" + sha[:12]
	}
	return rev
}

// runHub runs a hub on st until the test ends or stop is called; it may read file://
// sources under the temp dir, where the test's repository lives.
func runHub(t *testing.T, opts hub.Options, st store.Store) (*hub.Hub, func()) {
	t.Helper()
	if opts.AllowFileSources == nil {
		opts.AllowFileSources = []string{os.TempDir()}
	}
	h, err := hub.New(t.Context(), opts, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Run(ctx); err != nil {
			t.Errorf("hub: %v", err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return h, stop
}

// scrape is the hub's metrics as Prometheus reads them.
func scrape(h *hub.Hub) string {
	rec := httptest.NewRecorder()
	h.Metrics().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
