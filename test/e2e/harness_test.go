// Package e2e tests whole fleets: a hub, agents and real clusters (kube-apiserver + etcd),
// a real Git repository, real TLS.
package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster"
)

// repo is a Git work tree the test commits to, as a platform engineer would. Each commit
// tells the hubs of the test's fleets at once, as a Git host's push webhook would (generic
// provider, signed), so that no test waits out a source's poll interval.
type repo struct {
	t   *testing.T
	dir string
	r   *git.Repository
}

func newRepo(t *testing.T, dir string, files map[string]string) *repo {
	t.Helper()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		t.Fatal(err)
	}
	rp := &repo{t: t, dir: dir, r: r}
	rp.commit("initial", files)
	return rp
}

// commit writes files (an empty content deletes the file) and commits; it returns the hash.
func (rp *repo) commit(msg string, files map[string]string) string {
	rp.t.Helper()
	wt, err := rp.r.Worktree()
	if err != nil {
		rp.t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(rp.dir, filepath.FromSlash(name))
		if content == "" {
			if _, err := wt.Remove(name); err != nil {
				rp.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			rp.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			rp.t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			rp.t.Fatal(err)
		}
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "Platform Engineer", Email: "pe@example.com", When: time.Now()}})
	if err != nil {
		rp.t.Fatal(err)
	}
	for _, f := range fleets.of(rp.t) {
		f.pushed(rp.dir)
	}
	return h.String()
}

// hookSecret signs the pushes a commit announces to the test's hubs (/hooks/generic).
const hookSecret = "e2e-generic-webhook-secret-0123456789"

// fleets are the fleets of each running test, for its commits to announce themselves to.
var fleets = &fleetsByTest{m: map[testing.TB][]*fleet{}}

type fleetsByTest struct {
	mu sync.Mutex
	m  map[testing.TB][]*fleet
}

func (r *fleetsByTest) add(t testing.TB, f *fleet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m[t]) == 0 {
		t.Cleanup(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.m, t)
		})
	}
	r.m[t] = append(r.m[t], f)
}

func (r *fleetsByTest) of(t testing.TB) []*fleet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.m[t])
}

// pushed tells the hub, through its generic webhook, that the repository in dir has new
// commits on main. A hub that is down hears nothing: it polls every source when it starts.
// A refused announcement fails the test with Errorf (a commit may be made in a subtest's
// goroutine): the commit then lands only by polling, and the test's wait says so too.
func (f *fleet) pushed(dir string) {
	f.t.Helper()
	f.mu.Lock()
	running := f.hubUp
	f.mu.Unlock()
	if !running {
		return
	}
	body := fmt.Appendf(nil, `{"url": %q, "branch": "main"}`, "file://"+dir)
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodPost, f.hub.APIURL()+"/hooks/generic", bytes.NewReader(body))
	if err != nil {
		f.t.Errorf("announce a push of %s to the hub: %v", dir, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.GenericSignature, webhook.SignatureHeader(body, hookSecret))
	resp, err := f.hookClient.Do(req)
	if err != nil {
		f.t.Errorf("announce a push of %s to the hub: %v", dir, err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusAccepted {
		f.t.Errorf("announce a push of %s to the hub: %s: %s", dir, resp.Status, data)
	}
}

// fleet is a hub with its agents and clusters, all in this test process.
type fleet struct {
	t        *testing.T
	dir      string
	hubOpts  hub.Options
	hub      *hub.Hub
	hubStop  func()
	client   *hubclient.Client
	clusters map[string]*localcluster.Cluster
	agents   map[string]func() // stop functions
	mu       sync.Mutex
	// wrapStore, when set, wraps the hub's store at the next (re)start: for fault injection.
	wrapStore func(store.Store) store.Store
	// clock is the hub's: the wall clock, which a test may move forward (token expiry).
	clock *offsetClock
	// agentLogs keeps, by cluster, the warnings and errors its agents logged.
	agentLogs map[string]*logLines
	// hubUp is whether the hub runs (guarded by mu); hookClient trusts its CA.
	hubUp      bool
	hookClient *http.Client
}

// logLines are the warnings and errors a component logged, a line each (message, then its
// attributes), for a test that waits on what the component said.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

// count is how many lines hold every one of words.
func (l *logLines) count(words ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		held := true
		for _, w := range words {
			held = held && strings.Contains(line, w)
		}
		if held {
			n++
		}
	}
	return n
}

// recordHandler keeps warnings and errors in l and passes every record on to next, if any.
type recordHandler struct {
	l     *logLines
	attrs []slog.Attr
	next  slog.Handler
}

func (h recordHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn || h.next != nil && h.next.Enabled(ctx, level)
}

func (h recordHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Message)
		add := func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true }
		for _, a := range h.attrs {
			add(a)
		}
		r.Attrs(add)
		h.l.mu.Lock()
		h.l.lines = append(h.l.lines, b.String())
		h.l.mu.Unlock()
	}
	if h.next != nil && h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h recordHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clip(h.attrs), attrs...)
	if h.next != nil {
		h.next = h.next.WithAttrs(attrs)
	}
	return h
}

func (h recordHandler) WithGroup(name string) slog.Handler {
	if h.next != nil {
		h.next = h.next.WithGroup(name)
	}
	return h
}

// offsetClock is the wall clock plus an offset that a test moves forward, so that a TTL can
// be made to pass without waiting it out. Timers run in real time.
type offsetClock struct {
	clock.Real
	offset atomic.Int64
}

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// advance moves the clock forward by d.
func (c *offsetClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func (f *fleet) logger(component string) *slog.Logger {
	if h := logHandler(component); h != nil {
		return slog.New(h)
	}
	return slog.New(slog.DiscardHandler)
}

// logHandler writes a component's log to stderr with E2E_LOG set; nil without.
func logHandler(component string) slog.Handler {
	if os.Getenv("E2E_LOG") == "" {
		return nil
	}
	return slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}).WithAttrs([]slog.Attr{slog.String("component", component)})
}

// startHub starts (or restarts, on the same addresses and data dir) the hub.
func (f *fleet) startHub() {
	f.t.Helper()
	if err := os.MkdirAll(f.hubOpts.DataDir, 0o700); err != nil {
		f.t.Fatal(err)
	}
	st, err := store.OpenSQLite(f.t.Context(), filepath.Join(f.hubOpts.DataDir, "hub.db"))
	if err != nil {
		f.t.Fatal(err)
	}
	opts := f.hubOpts
	opts.Logger = f.logger("hub")
	var hubStore store.Store = st
	if f.wrapStore != nil {
		hubStore = f.wrapStore(st)
	}
	h, err := hub.New(f.t.Context(), opts, hubStore)
	if err != nil {
		st.Close()
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Run(ctx); err != nil {
			f.t.Errorf("hub: %v", err)
		}
	}()
	f.hub = h
	// Restarts must come back on the same addresses: agents know only those.
	f.hubOpts.AgentAddr = trimScheme(h.AgentURL())
	f.hubOpts.APIAddr = trimScheme(h.APIURL())
	f.hubStop = func() {
		f.mu.Lock()
		f.hubUp = false
		f.mu.Unlock()
		cancel()
		<-done
		st.Close()
	}
	if f.client, err = hubclient.NewClient(hubclient.Config{Hub: h.APIURL(), Token: h.AdminToken(), CAFile: h.CAPath()}); err != nil {
		f.t.Fatal(err)
	}
	pem, err := os.ReadFile(h.CAPath())
	if err != nil {
		f.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	f.hookClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	f.mu.Lock()
	f.hubUp = true
	f.mu.Unlock()
}

func trimScheme(u string) string { return u[len("https://"):] }

// startAgent starts the agent of a cluster; token is needed only the first time.
func (f *fleet) startAgent(name, token string) {
	f.t.Helper()
	c := f.clusters[name]
	f.mu.Lock()
	if f.agentLogs[name] == nil {
		f.agentLogs[name] = &logLines{}
	}
	lines := f.agentLogs[name]
	f.mu.Unlock()
	a, err := agent.New(f.t.Context(), agent.Options{
		HubURL: f.hub.AgentURL(), JoinToken: token, RESTConfig: c.RESTConfig(),
		StateDir: filepath.Join(f.dir, "agents", name), Logger: slog.New(recordHandler{l: lines, next: logHandler("agent-" + name)}),
		HeartbeatInterval: time.Second, ReportInterval: 200 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		f.t.Fatalf("agent %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			f.t.Errorf("agent: %v", err)
		}
		a.Close()
	}()
	f.mu.Lock()
	f.agents[name] = func() { cancel(); <-done }
	f.mu.Unlock()
}

func (f *fleet) stopAgent(name string) {
	f.mu.Lock()
	stop := f.agents[name]
	delete(f.agents, name)
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// newFleet starts clusters with the given labels, the hub on the fleet repository, and an
// agent per cluster joined through the user API.
func newFleet(t *testing.T, fleetURL string, labels map[string]map[string]string, tweak ...func(*hub.Options)) *fleet {
	t.Helper()
	dir := t.TempDir()
	f := &fleet{t: t, dir: dir, clusters: map[string]*localcluster.Cluster{}, agents: map[string]func(){}, clock: &offsetClock{}, agentLogs: map[string]*logLines{}}
	var names []string
	for name := range labels {
		names = append(names, name)
	}
	for i, c := range pool.Take(t, len(names)) {
		f.clusters[names[i]] = c
	}
	f.hubOpts = hub.Options{
		DataDir: filepath.Join(dir, "hub"), Fleet: fleetURL, FleetBranch: "main", FleetPath: "fleet",
		AgentAddr: freeAddr(t), APIAddr: freeAddr(t), FleetInterval: 300 * time.Millisecond, TokenTTL: 5 * time.Second,
		Clock: f.clock,
		// The tests' repositories are t.TempDir()s: their common parent is the test's own.
		AllowFileSources: []string{filepath.Dir(dir)},
	}
	for _, tw := range tweak {
		tw(&f.hubOpts)
	}
	if _, ok := f.hubOpts.WebhookSecrets["generic"]; !ok {
		f.hubOpts.WebhookSecrets = maps.Clone(f.hubOpts.WebhookSecrets)
		if f.hubOpts.WebhookSecrets == nil {
			f.hubOpts.WebhookSecrets = map[string]string{}
		}
		f.hubOpts.WebhookSecrets["generic"] = hookSecret
	}
	f.startHub()
	fleets.add(t, f)
	t.Cleanup(func() {
		for _, name := range names {
			f.stopAgent(name)
		}
		f.hubStop()
	})
	for _, name := range names {
		j, err := f.client.AddCluster(t.Context(), name, labels[name])
		if err != nil {
			t.Fatal(err)
		}
		f.startAgent(name, j.JoinToken)
	}
	return f
}

// waitStatus polls `status` until cond holds, failing the test with the last status after
// the timeout.
func (f *fleet) waitStatus(what string, timeout time.Duration, cond func(hubclient.StatusView) bool) hubclient.StatusView {
	f.t.Helper()
	var last hubclient.StatusView
	eventually.Within(f.t, timeout, func() error {
		st, err := f.client.Status(f.t.Context())
		if err != nil {
			return fmt.Errorf("%s: status: %w; last status read:\n%s", what, err, dump(last))
		}
		if last = st; !cond(last) {
			return fmt.Errorf("%s: not reached; last status:\n%s", what, dump(last))
		}
		return nil
	})
	return last
}

// hubMetrics returns the hub's Prometheus metrics.
func (f *fleet) hubMetrics() string {
	rec := httptest.NewRecorder()
	f.hub.Metrics().ServeHTTP(rec, httptest.NewRequestWithContext(f.t.Context(), http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// silence stops a cluster's agent and waits until the hub has seen its watch close: from then
// on the hub hears nothing from it, and its silence is counted on the hub's clock.
func (f *fleet) silence(name string) {
	f.t.Helper()
	const connected = "flotilla_hub_agents_connected"
	before := metric(f.hubMetrics(), connected)
	f.stopAgent(name)
	eventually.Within(f.t, 30*time.Second, func() error {
		if n := metric(f.hubMetrics(), connected); n != before-1 {
			return fmt.Errorf("%v agents connected to the hub, want %v once %s's has stopped", n, before-1, name)
		}
		return nil
	})
}

// equal is a condition for eventually: got returns want; else its error says what got returned.
func equal[T comparable](what string, got func() T, want T) func() error {
	return func() error {
		if g := got(); g != want {
			return fmt.Errorf("%s: %v, want %v", what, g, want)
		}
		return nil
	}
}

func dump(st hubclient.StatusView) string {
	s := fmt.Sprintf("fleet %+v\nsources %+v\nproblems %v\n", st.Fleet, st.Sources, st.Problems)
	for _, a := range st.Assignments {
		s += fmt.Sprintf("  %s on %s: desired %s applied %s phase %s err %q\n", a.Release, a.Cluster, a.DesiredRevision, a.AppliedRevision, a.Phase, a.Error)
	}
	return s
}

// converged: every expected release/cluster pair is Ready at a desired revision that contains
// commit, and nothing else is assigned.
func converged(commit string, want map[string][]string) func(hubclient.StatusView) bool {
	return func(st hubclient.StatusView) bool {
		got := map[string][]string{}
		for _, a := range st.Assignments {
			if a.Phase != "Ready" || a.AppliedRevision != a.DesiredRevision || !containsCommit(a.DesiredRevision, commit) {
				return false
			}
			got[a.Cluster] = append(got[a.Cluster], a.Release)
		}
		return fmt.Sprint(normalize(got)) == fmt.Sprint(normalize(want))
	}
}

func normalize(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		c := append([]string(nil), v...)
		sortStrings(c)
		out[k] = c
	}
	return out
}

func configMapData(t *testing.T, c *localcluster.Cluster, ns, name, key string) (string, bool) {
	t.Helper()
	cm, err := kubernetes.NewForConfigOrDie(c.RESTConfig()).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "", false
	}
	return cm.Data[key], true
}

// webFleet is a fleet of one release, web, applying path web of the Git repository whose
// directory is its one %s, to every cluster; tests append their own fields or objects.
const webFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: platform
  path: web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  prune: true
  interval: 2s
`
