package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/pki"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// containsCommit: the revision names commit; an empty commit accepts any revision.
func containsCommit(rev, commit string) bool { return commit == "" || strings.Contains(rev, commit) }
func sortStrings(s []string)                 { slices.Sort(s) }

func fleetFiles(repoURL string) map[string]string {
	return map[string]string{
		"fleet/sources.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: %s, branch: main}
  interval: 1h
`, repoURL),
		"fleet/releases.yaml": `apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: baseline}
spec:
  source: platform
  path: "apps/baseline/{{ .Cluster.Labels.region }}"
  targets: [{selector: {}}]
  namespace: platform-system
  createNamespace: true
  prune: true
  interval: 30s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: greeter}
spec:
  source: platform
  path: apps/greeter
  targets: [{selector: {matchLabels: {env: prod}}}]
  namespace: greeter
  createNamespace: true
  prune: true
  variables: {greeting: Hello}
  interval: 30s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: staging-tools}
spec:
  source: platform
  path: apps/staging-tools
  targets: [{selector: {matchLabels: {env: staging}}}]
  namespace: staging-tools
  createNamespace: true
  prune: true
  interval: 30s
`,
		"apps/baseline/eu/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {region: eu, residency: eu-only}\n",
		"apps/baseline/us/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {region: us, residency: none}\n",
		"apps/greeter/greeter.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeter}\ndata: {message: \"${greeting}, ${cluster_name}\"}\n",
		"apps/staging-tools/debug.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: debug-settings}\ndata: {logLevel: debug}\n",
	}
}

// TestFleet is the whole delivery loop on three real clusters: first convergence with a
// templated path, a commit, a relabel, an agent restart and a hub restart.
func TestFleet(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	head := rp.commit("nothing", map[string]string{"README.md": "demo fleet\n"})
	f := newFleet(t, repoURL, map[string]map[string]string{
		"eu-prod":    {"env": "prod", "region": "eu"},
		"us-prod":    {"env": "prod", "region": "us"},
		"eu-staging": {"env": "staging", "region": "eu"},
	})

	want := map[string][]string{
		"eu-prod":    {"baseline", "greeter"},
		"us-prod":    {"baseline", "greeter"},
		"eu-staging": {"baseline", "staging-tools"},
	}
	start := time.Now()
	f.waitStatus("first convergence", 2*time.Minute, converged(head, want))
	t.Logf("first convergence after %s", time.Since(start).Round(10*time.Millisecond))

	t.Run("templated path resolves per cluster", func(t *testing.T) {
		for name, region := range map[string]string{"eu-prod": "eu", "us-prod": "us", "eu-staging": "eu"} {
			if got, _ := configMapData(t, f.clusters[name], "platform-system", "platform-settings", "region"); got != region {
				t.Errorf("%s: platform-settings region = %q, want %q", name, got, region)
			}
		}
		if got, _ := configMapData(t, f.clusters["us-prod"], "greeter", "greeter", "message"); got != "Hello, us-prod" {
			t.Errorf("us-prod greeter message = %q, want substituted per cluster", got)
		}
	})

	t.Run("a commit converges everywhere", func(t *testing.T) {
		commit := rp.commit("tighten EU residency", map[string]string{
			"apps/baseline/eu/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {region: eu, residency: eu-strict}\n",
		})
		start := time.Now()
		st := f.waitStatus("convergence on the new commit", 2*time.Minute, converged(commit, want))
		t.Logf("commit to all three clusters converged: %s (fleet repo polled every 300ms, source every 2s)", time.Since(start).Round(10*time.Millisecond))
		for _, a := range st.Assignments {
			if a.Drifted || a.LastSeen == nil {
				t.Errorf("%s on %s: drifted=%v lastSeen=%v", a.Release, a.Cluster, a.Drifted, a.LastSeen)
			}
		}
		for _, name := range []string{"eu-prod", "eu-staging"} {
			if got, _ := configMapData(t, f.clusters[name], "platform-system", "platform-settings", "residency"); got != "eu-strict" {
				t.Errorf("%s: residency = %q after the commit", name, got)
			}
		}
		head = commit
	})

	t.Run("relabel moves releases on and off a cluster", func(t *testing.T) {
		v := "staging"
		if _, err := f.client.LabelCluster(t.Context(), "us-prod", map[string]*string{"env": &v}); err != nil {
			t.Fatal(err)
		}
		want["us-prod"] = []string{"baseline", "staging-tools"}
		f.waitStatus("releases moved after relabel", 2*time.Minute, converged(head, want))
		eventually.Within(t, time.Minute, eventually.True("greeter pruned from us-prod", func() bool {
			_, exists := configMapData(t, f.clusters["us-prod"], "greeter", "greeter", "message")
			return !exists
		}))
		if _, ok := configMapData(t, f.clusters["us-prod"], "staging-tools", "debug-settings", "logLevel"); !ok {
			t.Error("staging-tools not applied on us-prod after relabel")
		}
	})

	t.Run("an invalid fleet configuration is rejected and the last valid one stays", func(t *testing.T) {
		good := fleetFiles(repoURL)["fleet/releases.yaml"]
		rp.commit("typo in a release", map[string]string{"fleet/releases.yaml": strings.Replace(good, "source: platform\n  path: apps/greeter", "sorce: platform\n  path: apps/greeter", 1)})
		st := f.waitStatus("fleet error visible in status", time.Minute, func(st hubclient.StatusView) bool { return st.Fleet.Error != "" })
		for _, w := range []string{"fleet/releases.yaml", "Release/greeter", `unknown field "sorce"`} {
			if !strings.Contains(st.Fleet.Error, w) {
				t.Errorf("fleet error %q does not name %q", st.Fleet.Error, w)
			}
		}
		// The releases stay where they were (the source itself may move on meanwhile: it is
		// the same repository).
		got := map[string][]string{}
		for _, a := range st.Assignments {
			got[a.Cluster] = append(got[a.Cluster], a.Release)
		}
		if fmt.Sprint(normalize(got)) != fmt.Sprint(normalize(want)) {
			t.Errorf("assignments changed under an invalid configuration:\n%s", dump(st))
		}
		head = rp.commit("fix the typo", map[string]string{"fleet/releases.yaml": good})
		f.waitStatus("fleet error cleared", time.Minute, func(st hubclient.StatusView) bool { return st.Fleet.Error == "" && converged(head, want)(st) })
	})

	t.Run("an agent restart loses nothing", func(t *testing.T) {
		f.stopAgent("eu-prod")
		commit := rp.commit("greet warmly", map[string]string{
			"apps/greeter/greeter.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeter}\ndata: {message: \"${greeting}, ${cluster_name}!\"}\n",
		})
		f.startAgent("eu-prod", "") // identity from its state dir: no token
		f.waitStatus("convergence after agent restart", 2*time.Minute, converged(commit, want))
		if got, _ := configMapData(t, f.clusters["eu-prod"], "greeter", "greeter", "message"); got != "Hello, eu-prod!" {
			t.Errorf("eu-prod greeter = %q after restart", got)
		}
		head = commit
	})

	t.Run("a hub restart loses nothing", func(t *testing.T) {
		f.hubStop()
		f.startHub()
		st := f.waitStatus("status after hub restart", time.Minute, converged(head, want))
		if len(st.Assignments) != 6 {
			t.Errorf("%d assignments after restart, want 6", len(st.Assignments))
		}
		commit := rp.commit("after restart", map[string]string{"apps/staging-tools/debug.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: debug-settings}\ndata: {logLevel: info}\n"})
		f.waitStatus("convergence after hub restart", 2*time.Minute, converged(commit, want))
	})
}

// TestSecurity checks the hub's authorisation with real certificates and tokens.
func TestSecurity(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	newRepo(t, repoDir, fleetFiles(repoURL))
	f := newFleet(t, repoURL, map[string]map[string]string{"eu-prod": {"env": "prod", "region": "eu"}})
	f.waitStatus("convergence", 2*time.Minute, func(st hubclient.StatusView) bool {
		return len(st.Assignments) == 2 && st.Assignments[0].Phase == "Ready" && st.Assignments[1].Phase == "Ready"
	})
	ctx := t.Context()
	caPEM, err := os.ReadFile(f.hub.CAPath())
	if err != nil {
		t.Fatal(err)
	}

	// An "intruder" cluster that no release targets: registered, so it can join.
	j, err := f.client.AddCluster(ctx, "intruder", map[string]string{"env": "none"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tryJoin(ctx, f.hub.AgentURL(), j.JoinToken)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	client := mtls(t, caPEM, cert)

	t.Run("a join token works once", func(t *testing.T) {
		_, err := tryJoin(ctx, f.hub.AgentURL(), j.JoinToken)
		if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "used") {
			t.Errorf("reused token: err = %v, want permission denied naming the reuse", err)
		}
	})
	t.Run("a token altered to name another cluster is refused", func(t *testing.T) {
		j2, err := f.client.NewJoinToken(ctx, "intruder")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := pki.ParseJoinToken(j2.JoinToken)
		if err != nil {
			t.Fatal(err)
		}
		tok.Cluster = "eu-prod"
		if _, err := tryJoin(ctx, f.hub.AgentURL(), tok.Encode()); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("wrong-cluster token: err = %v, want permission denied", err)
		}
	})
	t.Run("an expired token is refused", func(t *testing.T) {
		j3, err := f.client.NewJoinToken(ctx, "intruder")
		if err != nil {
			t.Fatal(err)
		}
		f.clock.advance(f.hubOpts.TokenTTL + time.Second)
		if _, err := tryJoin(ctx, f.hub.AgentURL(), j3.JoinToken); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "expired") {
			t.Errorf("expired token: err = %v, want permission denied naming the expiry", err)
		}
	})
	t.Run("a certificate reads only its own desired state", func(t *testing.T) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		stream, err := agentv1connect.NewAgentServiceClient(client, f.hub.AgentURL()).Watch(wctx, connect.NewRequest(&agentv1.WatchRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		// The stream's first message may carry only its liveness flag (before the hub has
		// computed the new cluster's first desired state): read up to the first desired state.
		var ds *agentv1.DesiredState
		for ds == nil {
			if !stream.Receive() {
				t.Fatalf("no desired state: %v", stream.Err())
			}
			ds = stream.Msg().GetDesired()
		}
		if ds.GetCluster() != "intruder" || len(ds.GetAssignments()) != 0 {
			t.Errorf("intruder's watch returned cluster %q with %d assignments, want its own, empty", ds.GetCluster(), len(ds.GetAssignments()))
		}
	})
	t.Run("an artifact not assigned to the cluster is refused", func(t *testing.T) {
		st, err := f.client.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		srcs, _ := f.client.Sources(ctx)
		if len(srcs) == 0 || srcs[0].Digest == "" {
			t.Fatalf("no source artifact: %+v (%+v)", srcs, st)
		}
		hex := strings.TrimPrefix(srcs[0].Digest, "sha256:")
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.hub.AgentURL()+"/artifacts/sha256/"+hex, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET of another cluster's artifact: %s, want 403", resp.Status)
		}
	})
	t.Run("an assigned artifact is served with ETag and Range", func(t *testing.T) {
		jv, err := f.client.AddCluster(ctx, "viewer", map[string]string{"env": "prod", "region": "eu"})
		if err != nil {
			t.Fatal(err)
		}
		vcert, err := tryJoin(ctx, f.hub.AgentURL(), jv.JoinToken)
		if err != nil {
			t.Fatal(err)
		}
		viewer := mtls(t, caPEM, vcert)
		// The cluster's own artifact: its release path's, which its desired state names
		// (not the whole source's, which no cluster is given).
		var digest string
		eventually.Within(t, 30*time.Second, eventually.True("viewer scheduled", func() bool {
			st, err := f.client.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range st.Assignments {
				if a.Cluster == "viewer" && a.DesiredDigest != "" {
					digest = a.DesiredDigest
				}
			}
			return digest != ""
		}))
		url := f.hub.AgentURL() + "/artifacts/sha256/" + strings.TrimPrefix(digest, "sha256:")
		own, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := viewer.Do(own)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET of the viewer's own artifact: %s, want 200", resp.Status)
		}
		if srcs, _ := f.client.Sources(ctx); len(srcs) > 0 && srcs[0].Digest == digest {
			t.Errorf("the viewer was given the whole source's artifact %s, want its release path's", digest)
		}
		etag := resp.Header.Get("ETag")
		if etag != `"`+digest+`"` {
			t.Errorf("ETag = %q, want the digest", etag)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		req.Header.Set("Range", "bytes=0-9")
		if resp, err = viewer.Do(req); err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || len(body) != 10 {
			t.Errorf("Range request: %s with %d bytes, want 206 with 10", resp.Status, len(body))
		}
		req.Header.Del("Range")
		req.Header.Set("If-None-Match", etag)
		if resp, err = viewer.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("conditional GET with the ETag: %s, want 304", resp.Status)
		}
	})
	t.Run("malformed and oversized protocol messages are refused", func(t *testing.T) {
		url := f.hub.AgentURL() + agentv1connect.AgentServiceReportProcedure
		for _, tc := range []struct {
			name string
			body []byte
			want connect.Code
		}{
			{"malformed", []byte("\xff\xff\xff not protobuf"), connect.CodeInvalidArgument},
			{"oversized", make([]byte, 5<<20), connect.CodeResourceExhausted},
		} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/proto")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), tc.want.String()) || resp.StatusCode < 400 {
				t.Errorf("%s report: %s %s, want %s", tc.name, resp.Status, body, tc.want)
			}
		}
		// The hub still works for this agent afterwards.
		if _, err := agentv1connect.NewAgentServiceClient(client, f.hub.AgentURL()).Heartbeat(ctx, connect.NewRequest(&agentv1.HeartbeatRequest{})); err != nil {
			t.Errorf("heartbeat after bad messages: %v", err)
		}
	})
	t.Run("a removed cluster is locked out at once", func(t *testing.T) {
		svc := agentv1connect.NewAgentServiceClient(client, f.hub.AgentURL())
		if _, err := svc.Heartbeat(ctx, connect.NewRequest(&agentv1.HeartbeatRequest{})); err != nil {
			t.Fatalf("heartbeat before removal: %v", err)
		}
		if err := f.client.RemoveCluster(ctx, "intruder"); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Heartbeat(ctx, connect.NewRequest(&agentv1.HeartbeatRequest{}))
		if connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("heartbeat after removal: err = %v, want permission denied", err)
		}
	})
}

// tryJoin joins as an agent would and returns the client certificate.
func tryJoin(ctx context.Context, hubURL, token string) (tls.Certificate, error) {
	j, err := agent.Join(ctx, hubURL, token)
	return j.Certificate, err
}

func mtls(t *testing.T, caPEM []byte, cert tls.Certificate) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

// TestCertificateRenewal gives agents certificates that expire within seconds: the fleet keeps
// converging past their expiry only if agents renew them in time.
func TestCertificateRenewal(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	rp := newRepo(t, repoDir, fleetFiles(repoURL))
	const ttl = 8 * time.Second
	f := newFleet(t, repoURL, map[string]map[string]string{"eu-prod": {"env": "prod", "region": "eu"}},
		func(o *hub.Options) { o.CertTTL = ttl })
	want := map[string][]string{"eu-prod": {"baseline", "greeter"}}
	f.waitStatus("first convergence", time.Minute, converged(rp.commit("start", map[string]string{"README.md": "x\n"}), want))
	// Real time: the expiry under test is TLS's. The hub's TLS stack checks the agent's
	// certificate against the wall clock (its tls.Config has no Time), and the agent's renewal
	// timer runs on the wall clock too; moving the hub's clock instead would expire the
	// certificate at the hub before the agent's timer fires, a lockout rather than a renewal.
	time.Sleep(ttl + 2*time.Second) // the first certificate has expired by now
	commit := rp.commit("after expiry", map[string]string{"apps/greeter/greeter.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeter}\ndata: {message: renewed}\n"})
	f.waitStatus("convergence after the first certificate expired", time.Minute, converged(commit, want))
}
