package reconcile

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// requestLog records the path and query of every request a Reconciler sends.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.urls = append(l.urls, req.Method+" "+req.URL.Path)
		l.mu.Unlock()
		return next.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// about returns the requests since the last call whose path names a ConfigMap of namespace ns
// (GET, PATCH or DELETE of one, or a LIST of them all) and contains name.
func (l *requestLog) about(ns, name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.urls {
		path := u[strings.IndexByte(u, ' ')+1:]
		if path == "/api/v1/namespaces/"+ns+"/configmaps" || strings.HasSuffix(path, "/namespaces/"+ns+"/configmaps/"+name) {
			out = append(out, u)
		}
	}
	l.urls = nil
	return out
}

// loggedReconciler is a Reconciler whose requests go to log as well.
func loggedReconciler(t *testing.T, log *requestLog) *Reconciler {
	t.Helper()
	cfg := rest.CopyConfig(testCluster.RESTConfig())
	cfg.Wrap(log.RoundTrip)
	r, err := New(cfg, Config{PollInterval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const skipSet = `
apiVersion: v1
kind: ConfigMap
metadata: {name: stable}
data: {mode: production}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: moving}
data: {revision: "%REV%"}
`

func revision(rev string) string { return strings.ReplaceAll(skipSet, "%REV%", rev) }

// On a new revision the agent reconciles with SkipUnchanged: an object whose rendering is the
// one last applied is taken for unchanged by its hash, and nothing about it reaches the API
// server; the drift check (without SkipUnchanged) still reads it and heals a hand edit.
func TestSkipUnchangedOnNewRevision(t *testing.T) {
	t.Parallel()
	ns := uniqueName("skip")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true}
	mustReconcile(t, newTestReconciler(t), parse(t, ns, revision("1")), opts)
	cms := clientset(t).CoreV1().ConfigMaps(ns)
	before, err := cms.Get(t.Context(), "stable", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A Reconciler of its own, as after an agent restart: the hashes are in the inventory.
	log := &requestLog{}
	r := loggedReconciler(t, log)
	skip := opts
	skip.SkipUnchanged = true

	t.Run("an unchanged object is not sent on a new revision", func(t *testing.T) {
		res := mustReconcile(t, r, parse(t, ns, revision("2")), skip)
		if got := actions(res); got["configmap/stable"] != Unchanged || got["configmap/moving"] != Configured {
			t.Fatalf("actions %v, want stable unchanged and moving configured", got)
		}
		if reqs := log.about(ns, "stable"); len(reqs) != 0 {
			t.Errorf("requests about the unchanged ConfigMap: %v, want none", reqs)
		}
		after, err := cms.Get(t.Context(), "stable", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("resourceVersion of the unchanged ConfigMap went from %s to %s", before.ResourceVersion, after.ResourceVersion)
		}
		moving, err := cms.Get(t.Context(), "moving", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if moving.Data["revision"] != "2" {
			t.Errorf("changed ConfigMap has revision %q, want 2", moving.Data["revision"])
		}
	})

	t.Run("a hand edit is healed by the drift check", func(t *testing.T) {
		kubectl("patch", "configmap/stable", "--type=merge", `-p={"data":{"mode":"debug"}}`)(t, ns)
		// A new revision does not look at the object: the edit stays until the drift check.
		res := mustReconcile(t, r, parse(t, ns, revision("3")), skip)
		if got := actions(res)["configmap/stable"]; got != Unchanged {
			t.Errorf("stable on a new revision: %s, want unchanged (not read)", got)
		}
		if v := jsonPath("configmap/stable", "{.data.mode}")(t, ns); v != "debug" {
			t.Fatalf("mode = %q before the drift check, want the hand edit", v)
		}
		log.about(ns, "")
		res = mustReconcile(t, r, parse(t, ns, revision("3")), opts)
		if got := actions(res)["configmap/stable"]; got != Healed {
			t.Errorf("stable at the drift check: %s, want healed\n%s", got, res)
		}
		if v := jsonPath("configmap/stable", "{.data.mode}")(t, ns); v != "production" {
			t.Errorf("mode = %q after the drift check, want production", v)
		}
	})

	t.Run("drift left unhealed stays reported on a new revision", func(t *testing.T) {
		kubectl("patch", "configmap/stable", "--type=merge", `-p={"data":{"mode":"debug"}}`)(t, ns)
		reportOnly := opts
		reportOnly.SelfHeal = false
		res := mustReconcile(t, r, parse(t, ns, revision("3")), reportOnly)
		if got := actions(res)["configmap/stable"]; got != Drifted {
			t.Fatalf("stable at the drift check without self-heal: %s, want drifted", got)
		}
		reportOnly.SkipUnchanged = true
		res = mustReconcile(t, r, parse(t, ns, revision("4")), reportOnly)
		if got := actions(res)["configmap/stable"]; got != Drifted {
			t.Errorf("stable on a new revision after drift: %s, want still drifted", got)
		}
	})

	t.Run("a deleted object is re-created by the drift check", func(t *testing.T) {
		if err := cms.Delete(t.Context(), "moving", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		mustReconcile(t, r, parse(t, ns, revision("4")), skip)
		res := mustReconcile(t, r, parse(t, ns, revision("4")), opts)
		if got := actions(res)["configmap/moving"]; got != Healed {
			t.Errorf("moving at the drift check after deletion: %s, want healed", got)
		}
		if _, err := cms.Get(t.Context(), "moving", metav1.GetOptions{}); err != nil {
			t.Errorf("moving after the drift check: %v", err)
		}
	})
}
