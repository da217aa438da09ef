package hub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// testHub is a real hub on 127.0.0.1 with real TLS, its user API client, and its CA.
type testHub struct {
	*Hub
	api *hubclient.Client
	ca  *x509.CertPool
}

// startHub starts a hub on fleet (an empty directory if ""), with tweak applied to its options.
func startHub(t *testing.T, fleet string, tweak func(*Options)) *testHub {
	t.Helper()
	dir := t.TempDir()
	if fleet == "" {
		fleet = t.TempDir()
	}
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{DataDir: filepath.Join(dir, "hub"), Fleet: fleet, AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", FleetInterval: 200 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	t.Cleanup(func() { st.Close() }) // registered first, so it runs after the hub stopped
	th, _ := runHub(t, opts, st)
	return th
}

// runHub runs a hub on opts and st until the returned stop is called or the test ends. The
// caller closes st, after the hub stopped.
// replicaTokens holds the admin token of the first replica started on each test database
// (by its name), for the replicas that join it with the token's hash only. Each test has a
// database of its own.
var replicaTokens sync.Map

// databaseOf names a store's database: a replica may reach it through a fault proxy, at
// another address.
func databaseOf(st store.Store) string {
	s := fmt.Sprint(st)
	return s[strings.LastIndex(s, "/")+1:]
}

func runHub(t testing.TB, opts Options, st store.Store) (*testHub, func()) {
	t.Helper()
	if opts.AllowFileSources == nil {
		opts.AllowFileSources = []string{os.TempDir()} // where the tests' file:// sources live
	}
	h, err := New(t.Context(), opts, st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := h.Run(ctx); err != nil {
			t.Errorf("hub %s: %v", opts.Replica.ID, err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	token := h.AdminToken()
	if token == "" {
		// A replica that joined holds the token's hash only: the first one's token opens it.
		tok, ok := replicaTokens.Load(databaseOf(st))
		if !ok {
			t.Fatalf("hub %s holds only the admin token's hash, and no replica before it on %v made the token", opts.Replica.ID, st)
		}
		token = tok.(string)
	} else if _, shared := st.(replica.SharedStore); shared {
		replicaTokens.LoadOrStore(databaseOf(st), token)
	}
	api, err := hubclient.NewClient(hubclient.Config{Hub: h.APIURL(), Token: token, CAFile: h.CAPath()})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.ca.CertPEM())
	return &testHub{Hub: h, api: api, ca: pool}, stop
}

func (th *testHub) httpClient(certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: th.ca, Certificates: certs}}}
}

func (th *testHub) joinClient() agentv1connect.JoinServiceClient {
	return agentv1connect.NewJoinServiceClient(th.httpClient(), th.AgentURL())
}

// testAgent is a joined cluster identity: an mTLS HTTP client and the agent service client.
type testAgent struct {
	http   *http.Client
	url    string
	client agentv1connect.AgentServiceClient
}

// watch opens a watch stream. The agent's client times a whole request out at a minute, and
// a stream is one request: it runs on a copy without that timeout, bounded by ctx instead.
func (a *testAgent) watch(ctx context.Context) (*connect.ServerStreamForClient[agentv1.WatchResponse], error) {
	hc := *a.http
	hc.Timeout = 0
	return agentv1connect.NewAgentServiceClient(&hc, a.url).Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{}))
}

// openWatch is watch once the hub's first message said the stream is open.
func (a *testAgent) openWatch(ctx context.Context) (*connect.ServerStreamForClient[agentv1.WatchResponse], error) {
	stream, err := a.watch(ctx)
	if err != nil {
		return nil, err
	}
	if !stream.Receive() {
		return nil, stream.Err()
	}
	return stream, nil
}

// addAgent registers a cluster through the user API and joins it with a fresh key.
func (th *testHub) addAgent(t *testing.T, name string, labels map[string]string) *testAgent {
	t.Helper()
	j, err := th.api.AddCluster(t.Context(), name, labels)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := th.join(t.Context(), j.JoinToken)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	hc := th.httpClient(cert)
	return &testAgent{http: hc, url: th.AgentURL(), client: agentv1connect.NewAgentServiceClient(hc, th.AgentURL())}
}

func (th *testHub) join(ctx context.Context, token string) (tls.Certificate, error) {
	j, err := agent.Join(ctx, th.AgentURL(), token)
	return j.Certificate, err
}

// wantShed checks that err is the hub shedding load: resource_exhausted with a Retry-After of
// at least a second in the error's metadata. It returns the Retry-After.
func wantShed(t *testing.T, what string, err error) int {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		t.Fatalf("%s: got %v; want resource_exhausted", what, err)
	}
	secs, perr := strconv.Atoi(ce.Meta().Get("Retry-After"))
	if perr != nil || secs < 1 {
		t.Fatalf("%s: Retry-After %q in the error metadata (%v); want whole seconds >= 1", what, ce.Meta().Get("Retry-After"), ce.Meta())
	}
	return secs
}

func TestAgentRateLimit(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", func(o *Options) { o.AgentQPS, o.AgentBurst = 1, 2 })
	a := th.addAgent(t, "alpha", nil)
	b := th.addAgent(t, "bravo", nil)
	heartbeat := func(ag *testAgent) error {
		_, err := ag.client.Heartbeat(t.Context(), connect.NewRequest(&agentv1.HeartbeatRequest{}))
		return err
	}

	t.Run("a burst beyond the agent's bucket is refused with Retry-After", func(t *testing.T) {
		var refused error
		for i := range 5 {
			err := heartbeat(a)
			if err == nil {
				if i >= 3 { // burst 2, and at most one token refilled meanwhile
					t.Fatalf("heartbeat %d accepted; want the bucket of 2 exhausted", i+1)
				}
				continue
			}
			refused = err
			break
		}
		wantShed(t, "heartbeat beyond the burst", refused)
		if !strings.Contains(refused.Error(), `cluster "alpha"`) {
			t.Errorf("error %q does not name the cluster", refused)
		}
	})

	t.Run("the Watch stream sees the Retry-After too", func(t *testing.T) {
		stream, err := a.client.Watch(t.Context(), connect.NewRequest(&agentv1.WatchRequest{}))
		if err == nil {
			if stream.Receive() {
				t.Fatal("watch was served; want it refused")
			}
			err = stream.Err()
			stream.Close()
		}
		wantShed(t, "watch", err)
	})

	t.Run("plain HTTP sees 429 and a Retry-After header", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, th.AgentURL()+agentv1connect.AgentServiceHeartbeatProcedure, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if secs, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || secs < 1 {
			t.Fatalf("got %s, Retry-After %q; want 429 with whole seconds >= 1", resp.Status, resp.Header.Get("Retry-After"))
		}
		if !strings.Contains(string(body), `"code":"resource_exhausted"`) {
			t.Errorf("body %s; want a Connect error", body)
		}
	})

	t.Run("another agent is not affected", func(t *testing.T) {
		for i := range 2 {
			if err := heartbeat(b); err != nil {
				t.Fatalf("heartbeat %d of bravo: %v", i+1, err)
			}
		}
	})
}

// TestJoinLimitPerAddress: Join has its own bucket per client address, in front of the store;
// the global bucket counts only authenticated requests, so a flood of joins from one address
// refuses neither another address's join nor a joined agent's requests.
func TestJoinLimitPerAddress(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", func(o *Options) { o.JoinQPS, o.JoinBurst, o.GlobalQPS, o.GlobalBurst = 0.1, 3, 0.1, 3 })
	a := th.addAgent(t, "alpha", nil) // one join from 127.0.0.1
	j, err := th.api.AddCluster(t.Context(), "charlie", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := th.joinClient()
	// Only failed joins spend the address's bucket (alpha's did not).
	for i := range 3 {
		_, err := c.Join(t.Context(), connect.NewRequest(&agentv1.JoinRequest{Token: "not-a-token"}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("join %d within the burst: got %v; want invalid_argument (the token is bad)", i+2, err)
		}
	}
	// The fifth from this address, with a good token, finds the address's bucket empty.
	_, err = th.join(t.Context(), j.JoinToken)
	if secs := wantShed(t, "join beyond the address's burst", err); secs > 15 {
		t.Errorf("Retry-After %ds; want about 10s (one token per 10s)", secs)
	}
	if want := "join from 127.0.0.1: too many failed attempts from this address; retry in"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q; want it to say %q", err, want)
	}
	// Another address still joins: the good token is still unused.
	other := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: th.ca},
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
	}}
	_, err = agentv1connect.NewJoinServiceClient(other, th.AgentURL()).Join(t.Context(), connect.NewRequest(&agentv1.JoinRequest{Token: "not-a-token"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("join from 127.0.0.2: got %v; want invalid_argument, not the other address's limit", err)
	}
	// The joins took nothing from the global bucket: the joined agent's burst is whole.
	for i := range 3 {
		if _, err := a.client.Heartbeat(t.Context(), connect.NewRequest(&agentv1.HeartbeatRequest{})); err != nil {
			t.Fatalf("heartbeat %d after the join flood: %v", i+1, err)
		}
	}
}

func TestReportStatusesCapped(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	a := th.addAgent(t, "delta", nil)
	report := func(seq uint64, n int) (*connect.Response[agentv1.ReportResponse], error) {
		r := &agentv1.Report{Seq: seq}
		for i := range n {
			r.Statuses = append(r.Statuses, &agentv1.AssignmentStatus{Release: fmt.Sprintf("release-%04d", i), Phase: "Ready"})
		}
		return a.client.Report(t.Context(), connect.NewRequest(&agentv1.ReportRequest{Reports: []*agentv1.Report{r}}))
	}
	_, err := report(1, 1001)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "report 1: 1001 statuses; at most 1000") {
		t.Fatalf("got %v; want invalid_argument naming the report and the limit", err)
	}
	// At the bound, the count passes; what is refused then is the releases, which the cluster
	// (scheduled nothing) does not have.
	_, err = report(2, 1000)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || strings.Contains(err.Error(), "statuses") || !strings.Contains(err.Error(), `is not in the desired state of cluster "delta"`) {
		t.Fatalf("report of 1000 statuses: %v; want it past the count bound, refused for its releases", err)
	}
}

// TestArtifactDownloadsBounded serves a real artifact (a Git source with a 12 MiB manifest the
// fleet assigns to the cluster) with MaxArtifactDownloads 1: while one download is held open
// (the client reads nothing, so HTTP/2 flow control keeps the handler writing), a second one
// waits in the download queue, and is served once the first is read.
func TestArtifactDownloadsBounded(t *testing.T) {
	t.Parallel()
	repoDir, fleetDir := t.TempDir(), t.TempDir()
	// Random text, so that gzip keeps it large; a manifest of the release's own directory, so
	// that the release's artifact carries it.
	blob := make([]byte, 9<<20)
	rand.Read(blob)
	gittest.CommitFiles(t, repoDir, map[string][]byte{
		"apps/big/blob.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: blob}\ndata: {blob: " + base64.StdEncoding.EncodeToString(blob) + "}\n"),
		"apps/big/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: b}\n"),
	})
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
  interval: 1m
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: big}
spec:
  source: apps
  path: apps/big
  targets: [{selector: {matchLabels: {env: test}}}]
  namespace: big
`, repoDir)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, func(o *Options) { o.MaxArtifactDownloads = 1 })
	a := th.addAgent(t, "echo", map[string]string{"env": "test"})
	digest := waitDigest(t, a)
	url := th.AgentURL() + "/artifacts/sha256/" + strings.TrimPrefix(digest, "sha256:")
	get := func() *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		resp, err := a.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	first := get()
	defer first.Body.Close()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first download: %s", first.Status)
	}
	second := make(chan *http.Response, 1)
	go func() { second <- get() }() //nolint:bodyclose // closed below, once received from second
	eventually.Within(t, time.Minute, func() error {
		if m := scrape(th.Hub); !strings.Contains(m, `flotilla_hub_queue_waiting{queue="artifacts"} 1`) {
			return fmt.Errorf("the second download does not wait in the queue:\n%s", m)
		}
		return nil
	})

	digestOf := func(resp *http.Response) string {
		sum := sha256.New()
		if _, err := io.Copy(sum, resp.Body); err != nil {
			t.Fatal(err)
		}
		return "sha256:" + hex.EncodeToString(sum.Sum(nil))
	}
	if got := digestOf(first); got != digest {
		t.Fatalf("first download has digest %s; want %s", got, digest)
	}
	first.Body.Close()
	resp := <-second
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("queued download: %s; want it served once the first finished", resp.Status)
	}
	if got := digestOf(resp); got != digest {
		t.Fatalf("queued download has digest %s; want %s", got, digest)
	}
	if m := scrape(th.Hub); !strings.Contains(m, `flotilla_hub_queue_waiting{queue="artifacts"} 0`) || !strings.Contains(m, `flotilla_hub_queue_wait_seconds_count{queue="artifacts"} 2`) {
		t.Errorf("metrics after both downloads; want none waiting and two waits observed:\n%s", m)
	}
}

// waitDigest watches the agent's desired state until it has an assignment, and returns its
// artifact digest.
func waitDigest(t *testing.T, a *testAgent) string {
	t.Helper()
	// Packing a 12 MiB artifact at gzip's best compression takes about a minute under the
	// race detector on 2 cores (73 s for the whole test on this machine, before and after issue
	// 24's change): a minute failed whenever the suite ran beside it.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	stream, err := a.watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for stream.Receive() {
		for _, as := range stream.Msg().GetDesired().GetAssignments() {
			if as.GetDigest() != "" {
				return as.GetDigest()
			}
		}
	}
	t.Fatalf("no assignment with an artifact: %v", stream.Err())
	return ""
}

// TestWatchStreamsPerClusterCapped: one cluster's identity holds at most
// MaxStreamsPerCluster watch streams open; the next is refused with ResourceExhausted and
// a reason, and a stream can open again once one of them ended.
func TestWatchStreamsPerClusterCapped(t *testing.T) {
	t.Parallel()
	th := startHub(t, "", nil)
	a := th.addAgent(t, "greedy", nil)
	var cancels []context.CancelFunc
	for i := range agentapi.MaxStreamsPerCluster {
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		cancels = append(cancels, cancel)
		if _, err := a.openWatch(ctx); err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, agentapi.MaxStreamsPerCluster, err)
		}
	}
	_, err := a.openWatch(t.Context())
	want := fmt.Sprintf(`cluster "greedy" already has %d watch streams open on this hub`, agentapi.MaxStreamsPerCluster)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), want) {
		t.Fatalf("stream %d: %v; want resource_exhausted: %s", agentapi.MaxStreamsPerCluster+1, err, want)
	}
	// Another cluster is not held back by this one.
	if _, err := th.addAgent(t, "other", nil).openWatch(t.Context()); err != nil {
		t.Fatalf("another cluster's stream: %v", err)
	}
	cancels[0]()
	eventually.Within(t, time.Minute, func() error {
		if _, err := a.openWatch(t.Context()); err != nil {
			return fmt.Errorf("no stream once one of %d ended: %w", agentapi.MaxStreamsPerCluster, err)
		}
		return nil
	})
}
