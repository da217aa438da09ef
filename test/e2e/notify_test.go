package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// receiver is a real HTTP endpoint for notifications (/hook, /slack) and the audit sink
// (/audit): it keeps every body by path.
type receiver struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rv.mu.Lock()
	rv.bodies[r.URL.Path] = append(rv.bodies[r.URL.Path], body)
	rv.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rv *receiver) got(path string) [][]byte {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return slices.Clone(rv.bodies[path])
}

// events are the webhook events received so far, as "type release/cluster".
func (rv *receiver) events(t *testing.T) ([]string, []map[string]any) {
	t.Helper()
	var names []string
	var all []map[string]any
	for _, b := range rv.got("/hook") {
		var m struct{ Events []map[string]any }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("webhook body %s: %v", b, err)
		}
		for _, e := range m.Events {
			names = append(names, fmt.Sprintf("%s %s/%s", e["type"], e["release"], e["cluster"]))
			all = append(all, e)
		}
	}
	return names, all
}

// TestNotificationsAndAuditSink: a real cluster and agent run a release; a commit the API
// server rejects makes it fail, an edit by hand makes another drift, and fixing both recovers
// them. The webhook and Slack receivers hear of each transition once, with the agent's error;
// the audit sink receives every record of the hub's trail, in order.
func TestNotificationsAndAuditSink(t *testing.T) {
	t.Parallel()
	rv := &receiver{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	fleetYAML := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %[1]s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec: {source: apps, path: apps/web, targets: [{selector: {}}], namespace: web, createNamespace: true, prune: true}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: settings}
spec: {source: apps, path: apps/settings, targets: [{selector: {}}], namespace: settings, createNamespace: true, selfHeal: false, interval: 1s}
---
apiVersion: flotilla.dev/v1alpha1
kind: Notification
metadata: {name: ops}
spec: {type: webhook, url: "%[2]s/hook", insecure: true}
---
apiVersion: flotilla.dev/v1alpha1
kind: Notification
metadata: {name: chat}
spec: {type: slack, url: "%[2]s/slack", insecure: true, events: [failed, recovered], releases: [web]}
`, repoURL, srv.URL)
	cm := func(name, v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {v: \"" + v + "\"}\n"
	}
	rp := newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml":          fleetYAML,
		"apps/web/web.yaml":         cm("web", "1"),
		"apps/settings/limits.yaml": cm("limits", "1"),
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}}, func(o *hub.Options) {
		o.Notify.Interval = 200 * time.Millisecond
		o.AuditSink = audit.SinkOptions{URL: srv.URL + "/audit", PollInterval: 100 * time.Millisecond}
	})
	f.waitStatus("first convergence", 2*time.Minute, converged("", map[string][]string{"edge": {"settings", "web"}}))
	waitEvents := func(what string, want []string) []map[string]any {
		t.Helper()
		var all []map[string]any
		eventually.Within(t, time.Minute, func() error {
			var got []string
			if got, all = rv.events(t); !slices.Equal(got, want) {
				return fmt.Errorf("%s: webhook events %q, want %q", what, got, want)
			}
			return nil
		})
		return all
	}
	if got, _ := rv.events(t); len(got) != 0 {
		t.Fatalf("events while converging: %q; want none", got)
	}

	// A Service the API server rejects: web fails, with the server's reason.
	rp.commit("a bad port", map[string]string{"apps/web/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec: {ports: [{port: 99999}]}\n"})
	events := waitEvents("web fails", []string{"failed web/edge"})
	// Nothing of the bad commit was applied: the event says so with an empty appliedRevision.
	if e := events[0]; e["phase"] != "Failed" || !strings.Contains(fmt.Sprint(e["error"]), "service/broken") ||
		!strings.Contains(fmt.Sprint(e["desiredRevision"]), "main@") || e["appliedRevision"] != "" {
		t.Errorf("failed event %v; want phase Failed, the agent's error naming service/broken, the desired revision and nothing applied", e)
	}

	// An edit by hand of a release that does not heal: settings drifts.
	cs := kubernetes.NewForConfigOrDie(f.clusters["edge"].RESTConfig())
	limits, err := cs.CoreV1().ConfigMaps("settings").Get(t.Context(), "limits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits.Data["v"] = "edited by hand"
	if _, err := cs.CoreV1().ConfigMaps("settings").Update(t.Context(), limits, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvents("settings drifts", []string{"failed web/edge", "drifted settings/edge"})

	// Fix both: the port in Git, the ConfigMap back to what Git says.
	head := rp.commit("fix the port", map[string]string{"apps/web/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec: {ports: [{port: 8080}]}\n"})
	limits, err = cs.CoreV1().ConfigMaps("settings").Get(t.Context(), "limits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits.Data["v"] = "1"
	if _, err := cs.CoreV1().ConfigMaps("settings").Update(t.Context(), limits, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitStatus("converged again", 2*time.Minute, converged(head, map[string][]string{"edge": {"settings", "web"}}))
	var got []string
	eventually.Within(t, 30*time.Second, func() error {
		if got, _ = rv.events(t); len(got) < 4 {
			return fmt.Errorf("webhook events %q; want 4 (both recoveries)", got)
		}
		return nil
	})
	slices.Sort(got[2:])
	if want := []string{"failed web/edge", "drifted settings/edge", "recovered settings/edge", "recovered web/edge"}; !slices.Equal(got, want) {
		t.Fatalf("webhook events %q, want %q", got, want)
	}

	// Slack heard only of web's failure and recovery. Each destination is delivered on its
	// own, so Slack's recovery may come after the webhook's: wait for two.
	eventually.Within(t, 30*time.Second, func() error {
		if n := len(rv.got("/slack")); n < 2 {
			return fmt.Errorf("%d slack messages; want 2 (web's failure and recovery)", n)
		}
		return nil
	})
	var texts []string
	for _, b := range rv.got("/slack") {
		var m struct{ Text string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, m.Text)
	}
	if len(texts) != 2 || !strings.HasPrefix(texts[0], ":red_circle: *failed*: release `web` on cluster `edge`: phase Failed") ||
		!strings.Contains(texts[0], "service/broken") || !strings.HasPrefix(texts[1], ":white_check_mark: *recovered*: release `web` on cluster `edge`: back on main@") {
		t.Errorf("slack texts %q", texts)
	}

	// The audit sink has every record of the trail, in order.
	trail, err := f.client.Audit(t.Context(), hubclient.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	if err := eventually.Poll(t.Context(), 30*time.Second, func() error {
		seqs = nil
		for _, b := range rv.got("/audit") {
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r hubclient.AuditRecord
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("audit line %q: %v", sc.Text(), err)
				}
				seqs = append(seqs, r.Seq)
			}
		}
		if len(seqs) < len(trail) {
			return fmt.Errorf("audit sink received %d records, the trail holds %d", len(seqs), len(trail))
		}
		return nil
	}); err != nil {
		t.Log(err) // the checks below say what is wrong with what the sink received
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("audit sink received seqs %v; want 1, 2, 3, ... once each", seqs)
		}
	}
	if len(seqs) < len(trail) {
		t.Fatalf("audit sink received %d records, the trail holds %d", len(seqs), len(trail))
	}
}
