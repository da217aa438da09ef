package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"
	"github.com/flotilla/flotilla/internal/hub/replica"

	"connectrpc.com/connect"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pgtest"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// hubReplica is one hub replica of a test, on a PostgreSQL store shared with the others.
type hubReplica struct {
	*testHub
	stop func()
}

// startReplica starts a hub named id on the database dsn, with its own data dir.
func startReplica(t testing.TB, dsn, fleet, id string) *hubReplica {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return startReplicaOn(t, st, fleet, id)
}

// startReplicaOn starts a hub named id on st, which it closes when it stops.
func startReplicaOn(t testing.TB, st interface {
	store.Store
	Close() error
}, fleet, id string) *hubReplica {
	t.Helper()
	opts := Options{
		DataDir: filepath.Join(t.TempDir(), id), Fleet: fleet, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		FleetInterval: 200 * time.Millisecond, Replica: ReplicaOptions{ID: id, LeaseTTL: 3 * time.Second, SecretsKeyFile: testSecretsKeyFile(t)},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)).With("replica", id),
	}
	th, stopHub := runHub(t, opts, st)
	var once sync.Once
	stop := func() { once.Do(func() { stopHub(); st.Close() }) }
	t.Cleanup(stop)
	return &hubReplica{testHub: th, stop: stop}
}

// agentOn is the agent identity a, talking to replica r instead of the one it joined through.
func (a *testAgent) on(r *hubReplica) *testAgent {
	return &testAgent{http: a.http, url: r.AgentURL(), client: agentv1connect.NewAgentServiceClient(a.http, r.AgentURL())}
}

// leads is the condition that r holds the controller lease.
func leads(r *hubReplica) func() error {
	return func() error {
		if !r.IsLeader() {
			return fmt.Errorf("%s does not hold the controller lease (%d answers from the store)", r.ReplicaID(), r.repl.Lease().Answers())
		}
		return nil
	}
}

// listenChanges listens on the replicas' notification channel of dsn on a connection of its
// own, from before it returns until the test ends, and returns the events heard so far.
func listenChanges(t *testing.T, dsn string) func() []replica.Event {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []replica.Event
	listening := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- st.Listen(ctx, func(p string) {
			if p == "" {
				close(listening)
				return
			}
			var e replica.Event
			if err := json.Unmarshal([]byte(p), &e); err != nil {
				t.Errorf("notification %q: %v", p, err)
				return
			}
			mu.Lock()
			heard = append(heard, e)
			mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the test's listener: %v", err)
		}
		st.Close()
	})
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("the test's listener: %v", err)
	}
	return func() []replica.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard)
	}
}

// replicaFleet makes a Git source with one release for clusters labelled env=test, and a fleet
// directory naming it. It returns the fleet directory and the source repository.
func replicaFleet(t *testing.T) (fleetDir, repoDir string) {
	repoDir, fleetDir = t.TempDir(), t.TempDir()
	gittest.CommitFiles(t, repoDir, map[string][]byte{
		"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: one}\n"),
	})
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {matchLabels: {env: test}}}]
  namespace: web
`, repoDir)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	return fleetDir, repoDir
}

// commitMore commits files on top of the repository at dir.
func commitMore(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("change", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
}

// watch is an open Watch stream whose desired states arrive on a channel; the channel is
// closed with the stream, and err holds why it ended.
type watch struct {
	states chan *agentv1.DesiredState
	err    error
}

func openWatch(t *testing.T, a *testAgent) *watch {
	t.Helper()
	stream, err := a.client.Watch(t.Context(), connect.NewRequest(&agentv1.WatchRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	w := &watch{states: make(chan *agentv1.DesiredState, 16)}
	go func() {
		defer close(w.states)
		defer stream.Close()
		for stream.Receive() {
			w.states <- stream.Msg().GetDesired()
		}
		w.err = stream.Err()
	}()
	return w
}

// next returns the next desired state the watch receives.
func (w *watch) next(t *testing.T, what string) *agentv1.DesiredState {
	t.Helper()
	select {
	case ds, ok := <-w.states:
		if !ok {
			t.Fatalf("%s: the watch ended: %v", what, w.err)
		}
		return ds
	case <-time.After(time.Minute):
		t.Fatalf("%s: no desired state within a minute", what)
		return nil
	}
}

// pollCount is how many polls of source the hub made, from its metrics.
func pollCount(h *Hub, source string) string {
	return metricValue(h, fmt.Sprintf(`flotilla_hub_source_poll_duration_seconds_count{source=%q}`, source))
}

// metricValue is the value of the series named (with its labels) in the hub's metrics, "0"
// if absent.
func metricValue(h *Hub, series string) string {
	rec := httptest.NewRecorder()
	h.Metrics().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return n
		}
	}
	return "0"
}

func TestReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	fleet, repo := replicaFleet(t)
	r1 := startReplica(t, dsn, fleet, "replica-1")
	eventually.Within(t, time.Minute, leads(r1))
	r2 := startReplica(t, dsn, fleet, "replica-2")

	t.Run("replicas share one CA and admin token", func(t *testing.T) {
		if !bytes.Equal(r1.Hub.ca.CertPEM(), r2.Hub.ca.CertPEM()) {
			t.Error("the replicas have different CAs")
		}
		// replica-2 keeps only the token's hash, and takes replica-1's token.
		if r2.AdminToken() != "" || !r2.bootstrap.Match(r1.AdminToken()) {
			t.Errorf("replica-2: admin token %q, takes replica-1's: %v; want only its hash, and yes", r2.AdminToken(), r2.bootstrap.Match(r1.AdminToken()))
		}
	})

	// The cluster is added through replica 2 (which does not schedule) and its agent watches
	// on replica 2: the schedule made by replica 1 must reach it.
	a := r2.addAgent(t, "edge-1", map[string]string{"env": "test"})
	w := openWatch(t, a)
	var first *agentv1.DesiredState
	t.Run("a cluster added through one replica is scheduled by the lease holder", func(t *testing.T) {
		for first = w.next(t, "first desired state"); len(first.GetAssignments()) == 0; first = w.next(t, "first assignment") {
		}
	})

	t.Run("each replica's audit records name it", func(t *testing.T) {
		for _, r := range []*hubReplica{r1, r2} {
			recs, err := r.api.Audit(t.Context(), hubclient.AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 {
				t.Errorf("%s has no audit records", r.ReplicaID())
			}
			for _, rec := range recs {
				if rec.Detail["replica"] != r.ReplicaID() {
					t.Errorf("%s: record %d (%s) names replica %v", r.ReplicaID(), rec.Seq, rec.Action, rec.Detail["replica"])
				}
			}
		}
		recs, err := r2.api.Audit(t.Context(), hubclient.AuditFilter{Action: "cluster.added", Cluster: "edge-1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 {
			t.Errorf("replica-2, which added edge-1, has %d cluster.added records for it, want 1", len(recs))
		}
	})

	t.Run("a replica that does not schedule shows the same releases", func(t *testing.T) {
		var want, got []hubclient.ReleaseView
		eventually.Within(t, time.Minute, func() error {
			var err error
			if want, err = r1.api.Releases(t.Context()); err != nil {
				return fmt.Errorf("replica-1's releases: %w", err)
			}
			if got, err = r2.api.Releases(t.Context()); err != nil {
				return fmt.Errorf("replica-2's releases: %w", err)
			}
			if len(want) != 1 {
				return fmt.Errorf("replica-1 lists %d releases, want 1", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Errorf("releases on replica-2 (-replica-1 +replica-2):\n%s", diff)
			}
			return nil
		})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("releases on replica-2 (-replica-1 +replica-2):\n%s", diff)
		}
	})

	t.Run("only the lease holder polls", func(t *testing.T) {
		if r2.IsLeader() {
			t.Fatal("replica-2 holds the lease replica-1 holds")
		}
		if n := pollCount(r1.Hub, "apps"); n == "0" {
			t.Error("replica-1, the lease holder, never polled source apps")
		}
		if n := pollCount(r2.Hub, "apps"); n != "0" {
			t.Errorf("replica-2 polled source apps %s times without holding the lease", n)
		}
		for r, want := range map[*hubReplica]string{r1: "1", r2: "0"} {
			if got := metricValue(r.Hub, "flotilla_hub_controller_lease_held"); got != want {
				t.Errorf("%s: flotilla_hub_controller_lease_held = %s, want %s", r.ReplicaID(), got, want)
			}
		}
	})

	t.Run("a replica serves an artifact another replica packed", func(t *testing.T) {
		digest := first.GetAssignments()[0].GetDigest()
		url := r2.AgentURL() + "/artifacts/sha256/" + strings.TrimPrefix(digest, "sha256:")
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		resp, err := a.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sum := sha256.New()
		if _, err := io.Copy(sum, resp.Body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s from replica-2: %s", digest, resp.Status)
		}
		if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); got != digest {
			t.Errorf("replica-2 served content with digest %s, want %s", got, digest)
		}
	})

	t.Run("a relabel through one replica wakes a watch on the other", func(t *testing.T) {
		start := time.Now()
		if _, err := r1.api.LabelCluster(t.Context(), "edge-1", map[string]*string{"env": ptr("other")}); err != nil {
			t.Fatal(err)
		}
		ds := w.next(t, "desired state after the relabel")
		t.Logf("relabel through replica-1 reached the watch on replica-2 after %v", time.Since(start))
		if ds.GetGeneration() <= first.GetGeneration() || len(ds.GetAssignments()) != 0 {
			t.Errorf("after the relabel: generation %d with %d assignments, want above %d with none",
				ds.GetGeneration(), len(ds.GetAssignments()), first.GetGeneration())
		}
		if _, err := r2.api.LabelCluster(t.Context(), "edge-1", map[string]*string{"env": ptr("test")}); err != nil {
			t.Fatal(err)
		}
		if ds := w.next(t, "desired state after relabelling back"); len(ds.GetAssignments()) != 1 {
			t.Errorf("after relabelling back: %d assignments, want 1", len(ds.GetAssignments()))
		}
	})

	t.Run("the lease moves when its holder stops, and the new holder polls", func(t *testing.T) {
		r1.stop()
		eventually.Within(t, time.Minute, leads(r2))
		commitMore(t, repo, map[string][]byte{
			"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: two}\n"),
		})
		for {
			ds := w.next(t, "desired state with the new commit")
			if as := ds.GetAssignments(); len(as) == 1 && as[0].GetRevision() != first.GetAssignments()[0].GetRevision() {
				break
			}
		}
	})

	t.Run("removing a cluster through one replica ends its watch on the other and refuses its next request", func(t *testing.T) {
		r3 := startReplica(t, dsn, fleet, "replica-3")
		b := r3.addAgent(t, "edge-2", map[string]string{"env": "test"})
		wb := openWatch(t, b.on(r3))
		wb.next(t, "edge-2's first desired state")
		// A heartbeat first, so that replica-3 has checked (and remembers) the certificate.
		if _, err := b.on(r3).client.Heartbeat(t.Context(), connect.NewRequest(&agentv1.HeartbeatRequest{})); err != nil {
			t.Fatalf("heartbeat to replica-3 before the removal: %v", err)
		}
		if err := r2.api.RemoveCluster(t.Context(), "edge-2"); err != nil {
			t.Fatal(err)
		}
		for range wb.states {
		}
		if code := connect.CodeOf(wb.err); code != connect.CodePermissionDenied {
			t.Errorf("watch of the removed cluster ended with %v, want permission_denied", wb.err)
		}
		_, err := b.on(r3).client.Heartbeat(t.Context(), connect.NewRequest(&agentv1.HeartbeatRequest{}))
		if code := connect.CodeOf(err); code != connect.CodePermissionDenied {
			t.Errorf("heartbeat to replica-3 after the removal through replica-2: %v, want permission_denied", err)
		}
	})

	t.Run("a replica that does not poll drops artifacts no longer in use from its cache", func(t *testing.T) {
		r4 := startReplica(t, dsn, fleet, "replica-4")
		c := r4.addAgent(t, "edge-3", map[string]string{"env": "test"})
		digest := waitDigest(t, c.on(r4))
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, r4.AgentURL()+"/artifacts/sha256/"+strings.TrimPrefix(digest, "sha256:"), nil)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !r4.artifacts.Has(digest) {
			t.Fatalf("download from replica-4: %s; cached: %v", resp.Status, r4.artifacts.Has(digest))
		}
		commitMore(t, repo, map[string][]byte{
			"apps/web/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: three}\n"),
		})
		eventually.Within(t, time.Minute, func() error {
			if r4.artifacts.Has(digest) {
				return fmt.Errorf("replica-4 still caches %s, the artifact of the old commit", digest)
			}
			return nil
		})
	})
}

func ptr[T any](v T) *T { return &v }

func TestReplicaRefusesForeignCA(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	startReplica(t, dsn, t.TempDir(), "replica-1")

	// A data dir that belonged to another hub (its own CA) must not join the replicas: the
	// agents that trust its CA would be locked out if it were overwritten.
	dir := t.TempDir()
	if _, err := pki.LoadOrCreateCA(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(t.Context(), Options{DataDir: dir, Fleet: t.TempDir(), AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
		Replica: ReplicaOptions{SecretsKeyFile: testSecretsKeyFile(t)}}, st)
	if err == nil || !strings.Contains(err.Error(), "differs from the ca.crt the other hub replicas share") {
		t.Fatalf("New with another hub's data dir: err = %v, want one saying its CA differs", err)
	}
}

// TestReplicaLeaseLostWhenDatabaseUnreachable cuts one replica off the database without
// closing anything (a partition that does not answer): it must stop acting as the lease holder
// before the lease expires, and the other replica must take over.
func TestReplicaLeaseLostWhenDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	dsn, proxied, proxy := pgtest.BehindProxy(t)
	fleet, _ := replicaFleet(t)

	r1 := startReplica(t, proxied, fleet, "replica-1")
	eventually.Within(t, time.Minute, leads(r1))
	r2 := startReplica(t, dsn, fleet, "replica-2")

	proxy.Blackhole(true)
	defer proxy.Blackhole(false) // so that replica-1 can stop cleanly
	eventually.Within(t, time.Minute, func() error {
		if r1.IsLeader() && r2.IsLeader() {
			t.Fatal("both replicas hold the controller lease")
		}
		return leads(r2)()
	})
	if r1.IsLeader() {
		t.Error("replica-1, cut off the database, still acts as the lease holder")
	}
	proxy.Blackhole(false)
	r1Answers, r2Answers := r1.repl.Lease().Answers(), r2.repl.Lease().Answers()
	eventually.Within(t, time.Minute, func() error {
		if r1.IsLeader() {
			t.Fatal("replica-1 took the lease back from replica-2, which kept renewing it")
		}
		if n1, n2 := r1.repl.Lease().Answers()-r1Answers, r2.repl.Lease().Answers()-r2Answers; n1 < 3 || n2 < 3 {
			return fmt.Errorf("renewals answered since the partition healed: replica-1 %d, replica-2 %d; want 3 each", n1, n2)
		}
		return nil
	})
	if r1.IsLeader() {
		t.Error("replica-1 took the lease back from replica-2, which kept renewing it")
	}
}

// BenchmarkReplicaFanout measures how long a desired-state change takes to wake a watch: on
// the replica that made it (the baseline: a local wake, plus the NOTIFY it sends) and on
// another replica (through PostgreSQL's LISTEN/NOTIFY). Compare the two in one run.
func BenchmarkReplicaFanout(b *testing.B) {
	dsn := pgtest.NewDatabase(b)
	fleet := b.TempDir()
	r1 := startReplica(b, dsn, fleet, "replica-1")
	r2 := startReplica(b, dsn, fleet, "replica-2")
	for _, bc := range []struct {
		name string
		on   *hubReplica
	}{{"watch=same-replica", r1}, {"watch=other-replica", r2}} {
		b.Run(bc.name, func(b *testing.B) {
			woken, cancel, err := bc.on.watchers.Subscribe("edge-1")
			if err != nil {
				b.Fatal(err)
			}
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				r1.watchers.Notify("edge-1")
				select {
				case <-woken:
				case <-time.After(10 * time.Second):
					b.Fatal("the watch was not woken within 10s")
				}
			}
		})
	}
}

// TestReplicasStartingAtOnceShareOneCA prepares replicas together on a fresh database: each
// creates a CA of its own before offering it, and all must end up with the one stored first.
func TestReplicasStartingAtOnceShareOneCA(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	fleet := t.TempDir()
	hubs := make([]*Hub, 3)
	errs := make([]error, len(hubs))
	keyFile := testSecretsKeyFile(t)
	var wg sync.WaitGroup
	for i := range hubs {
		wg.Go(func() {
			st, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { st.Close() })
			opts := Options{DataDir: t.TempDir(), Fleet: fleet, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0",
				Replica: ReplicaOptions{ID: fmt.Sprintf("replica-%d", i), SecretsKeyFile: keyFile}}
			hubs[i], errs[i] = New(t.Context(), opts, st)
		})
	}
	wg.Wait()
	for i, h := range hubs {
		if errs[i] != nil {
			t.Fatalf("replica-%d: %v", i, errs[i])
		}
		t.Cleanup(func() { h.agentLn.Close(); h.apiLn.Close(); h.audit.Close() })
	}
	// The replica whose offer the store kept holds the token; the others its hash.
	var token string
	for _, h := range hubs {
		if tok := h.AdminToken(); tok != "" {
			if token != "" {
				t.Fatal("two replicas hold an admin token of their own")
			}
			token = tok
		}
	}
	for i, h := range hubs {
		if !bytes.Equal(h.ca.CertPEM(), hubs[0].ca.CertPEM()) || !h.bootstrap.Match(token) {
			t.Errorf("replica-%d: another CA than replica-0's, or refuses the admin token", i)
		}
	}
}

// TestReplicaResyncsAfterMissedNotifications cuts one replica off the database while another
// changes a cluster's desired state: the notification is lost to it, so when it reconnects it
// must resynchronise its watch streams, and the agent watching there gets the change.
func TestReplicaResyncsAfterMissedNotifications(t *testing.T) {
	t.Parallel()
	dsn, proxied, proxy := pgtest.BehindProxy(t)
	fleet, _ := replicaFleet(t)

	r1 := startReplica(t, dsn, fleet, "replica-1")
	eventually.Within(t, time.Minute, leads(r1))
	r2 := startReplica(t, proxied, fleet, "replica-2")
	a := r1.addAgent(t, "edge-1", map[string]string{"env": "test"})
	w := openWatch(t, a.on(r2))
	first := firstAssignment(t, w)

	// The test listens too, on a connection never cut: once it hears replica-1 tell of
	// edge-1's new desired state, that notification is sent, and lost to replica-2.
	heard := listenChanges(t, dsn)
	// The open watch stream stays up: it is the agent's connection to replica-2, not
	// replica-2's to the database.
	proxy.Refuse(true)
	proxy.Cut()
	before := len(heard())
	relabelAway(t, r1, first)
	eventually.Within(t, time.Minute, func() error {
		since := heard()[before:]
		for _, e := range since {
			if e.Replica == "replica-1" && e.Kind == replica.EventDesired && (e.Cluster == "edge-1" || slices.Contains(e.Clusters, "edge-1")) {
				return nil
			}
		}
		return fmt.Errorf("since the relabelling, heard %+v; want replica-1's notification of edge-1's desired state", since)
	})
	proxy.Refuse(false)
	wantRelabelled(t, w.next(t, "desired state after replica-2 reconnected"), first)
}

// mutedStore is a replica's PostgreSQL store whose change notifications, once muted, never
// leave: what a replica that dies with notifications still in its outbox leaves behind.
type mutedStore struct {
	*store.Postgres
	muted atomic.Bool
}

func (m *mutedStore) Publish(ctx context.Context, payloads ...string) error {
	if m.muted.Load() {
		return nil
	}
	return m.Postgres.Publish(ctx, payloads...)
}

// TestTakeOverAnnouncesWhatTheHolderBeforeStored: the lease holder stores a cluster's new
// desired state, and its notification never leaves (it died with it queued). The replica that
// takes the lease finds nothing to reschedule, since the store already holds what its plan
// computes; the watch stream on it must still hand the agent the new state.
func TestTakeOverAnnouncesWhatTheHolderBeforeStored(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	fleet, _ := replicaFleet(t)

	pg, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := &mutedStore{Postgres: pg}
	r1 := startReplicaOn(t, st, fleet, "replica-1")
	eventually.Within(t, time.Minute, leads(r1))
	r2 := startReplica(t, dsn, fleet, "replica-2")
	a := r1.addAgent(t, "edge-1", map[string]string{"env": "test"})
	w := openWatch(t, a.on(r2))
	first := firstAssignment(t, w)

	st.muted.Store(true)
	relabelAway(t, r1, first)
	r1.stop()
	eventually.Within(t, time.Minute, leads(r2))
	wantRelabelled(t, w.next(t, "desired state after replica-2 took the lease"), first)
}

// firstAssignment reads the watch until edge-1's desired state assigns it something.
func firstAssignment(t *testing.T, w *watch) *agentv1.DesiredState {
	t.Helper()
	ds := w.next(t, "first desired state")
	for len(ds.GetAssignments()) == 0 {
		ds = w.next(t, "first assignment")
	}
	return ds
}

// relabelAway relabels edge-1 through r so that no release selects it, and waits until r has
// stored its desired state past first.
func relabelAway(t *testing.T, r *hubReplica, first *agentv1.DesiredState) {
	t.Helper()
	if _, err := r.api.LabelCluster(t.Context(), "edge-1", map[string]*string{"env": ptr("other")}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, time.Minute, func() error {
		ds, err := r.store.GetDesiredState(t.Context(), "edge-1")
		if err != nil {
			return fmt.Errorf("edge-1's desired state on %s: %w", r.ReplicaID(), err)
		}
		if ds.Generation <= first.GetGeneration() {
			return fmt.Errorf("%s stores edge-1's desired state at generation %d, want above %d", r.ReplicaID(), ds.Generation, first.GetGeneration())
		}
		return nil
	})
}

// wantRelabelled checks that ds is edge-1's desired state after relabelAway: a newer
// generation, with nothing assigned.
func wantRelabelled(t *testing.T, ds, first *agentv1.DesiredState) {
	t.Helper()
	if ds.GetGeneration() <= first.GetGeneration() || len(ds.GetAssignments()) != 0 {
		t.Errorf("generation %d with %d assignments, want above %d with none",
			ds.GetGeneration(), len(ds.GetAssignments()), first.GetGeneration())
	}
}
