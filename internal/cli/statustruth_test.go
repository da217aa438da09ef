package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestStatusTellsTheTruth runs status, cluster show and status --watch against a real hub
// with a seeded fleet of 10 clusters and one release, plus reports an agent sends for a
// release that failed before applying anything and one that does not wait for health.
func TestStatusTellsTheTruth(t *testing.T) {
	f := hubtest.Start(t, hubtest.Options{Clusters: 10, Releases: 1})
	conn := []string{"--hub", f.APIURL, "--token", f.AdminToken, "--ca", f.CAPath}
	desired := f.Seeded[0] // cluster-0000: Ready on the desired revision
	report := func(cluster string, seq uint64, phase hubclient.Phase, health string, objects int, errText string) {
		t.Helper()
		now := time.Now()
		s := store.AssignmentStatus{
			Cluster: cluster, Release: desired.Release, ObservedGeneration: 1, Revision: desired.Revision, Digest: desired.Digest,
			Phase: string(phase), Health: health, Objects: objects, Error: errText, ReportedAt: now, UpdatedAt: now,
		}
		if _, err := f.Store.IngestReport(t.Context(), cluster, seq, []store.AssignmentStatus{s}); err != nil {
			t.Fatalf("ingest a report of %s: %v", cluster, err)
		}
	}
	report("cluster-0001", 2, hubclient.PhaseFailed, "", 0, `assignment "release-00": render: apps/release-00/settings.yaml: yaml: line 3: did not find expected key`)
	report("cluster-0002", 2, hubclient.PhaseReady, "", 2, "")
	rev := short(f.Revision)

	rows := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if fs := strings.Fields(l); len(fs) > 0 && strings.HasPrefix(fs[0], "cluster-") {
				m[fs[0]] = strings.Join(fs, " ")
			}
		}
		return m
	}
	t.Run("applied and health are never blank", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := Run(t.Context(), append([]string{"status", "release-00"}, conn...), &out, &errOut); code != 0 {
			t.Fatalf("status release-00: exit %d: %s", code, errOut.String())
		}
		got := rows(out.String())
		for cluster, want := range map[string]string{
			"cluster-0000": "cluster-0000 " + rev + " " + rev + " Ready Current - 0",
			"cluster-0001": "cluster-0001 " + rev + " - Failed - - 0",
			"cluster-0002": "cluster-0002 " + rev + " " + rev + " Ready - - 0",
			"cluster-0007": "cluster-0007 " + rev + " " + rev + " Failed Failed - 0", // failed after applying
		} {
			if !strings.HasPrefix(got[cluster], want) {
				t.Errorf("row %q, want it to start with %q", got[cluster], want)
			}
		}
		out.Reset()
		if code := Run(t.Context(), append([]string{"cluster", "show", "cluster-0001"}, conn...), &out, &errOut); code != 0 {
			t.Fatalf("cluster show: exit %d: %s", code, errOut.String())
		}
		if words := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(words, "release-00 "+rev+" - Failed - - 0 0 assignment") {
			t.Errorf("cluster show cluster-0001:\n%s", out.String())
		}
	})

	t.Run("watch prints what changes until Ctrl-C", func(t *testing.T) {
		ctx, interrupt := context.WithCancel(t.Context())
		defer interrupt()
		// Through a proxy that counts the status requests: "several polls with nothing
		// changed" is counted, not waited for.
		proxy := startPollCounter(t, f)
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- Run(ctx, []string{"status", "release-00", "--watch", "--interval", "50ms", "--hub", proxy.url, "--token", f.AdminToken, "--ca", proxy.caPath}, &out, &errOut)
		}()
		seen := func(what string, cond func(string) bool) func() error {
			return func() error {
				if !cond(out.String()) {
					return fmt.Errorf("%s: not seen:\n%s\nstderr: %s", what, out.String(), errOut.String())
				}
				return nil
			}
		}
		// morePolls waits until the watch has asked the hub n more times: a poll's output is
		// written before the next poll is sent, so n-1 polls have been printed by then.
		morePolls := func(n int64) {
			t.Helper()
			want := proxy.polls.Load() + n
			eventually.Within(t, 20*time.Second, func() error {
				if got := proxy.polls.Load(); got < want {
					return fmt.Errorf("%d status requests, want %d\nstderr: %s", got, want, errOut.String())
				}
				return nil
			})
		}
		eventually.Within(t, 20*time.Second, seen("the first table", func(s string) bool { return strings.Contains(s, "cluster-0009") }))
		if strings.Contains(out.String(), "LAST SEEN") {
			t.Errorf("--watch shows LAST SEEN, which changes at every heartbeat:\n%s", out.String())
		}
		morePolls(4) // several polls with nothing changed: nothing printed
		first := out.String()
		report("cluster-0001", 3, hubclient.PhaseReady, "Current", 2, "")
		eventually.Within(t, 20*time.Second, seen("the changed row", func(s string) bool { return len(s) > len(first) }))
		morePolls(4)
		added := strings.TrimPrefix(out.String(), first)
		if got := rows(added); len(got) != 1 || !strings.HasPrefix(got["cluster-0001"], "cluster-0001 "+rev+" "+rev+" Ready Current") {
			t.Errorf("after cluster-0001 became Ready, --watch printed:\n%s\nwant only its new row", added)
		}
		if strings.Count(out.String(), "cluster-0000 ") != 1 {
			t.Errorf("an unchanged row was printed again:\n%s", out.String())
		}
		interrupt()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("status --watch after Ctrl-C: exit %d, want 0 (stderr: %s)", code, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("status --watch did not stop within 10s of Ctrl-C")
		}
	})

	t.Run("a hub CA not given gets a hint", func(t *testing.T) {
		t.Setenv("FLOTILLA_CA", "")
		t.Setenv("FLOTILLA_CONFIG", "/nonexistent")
		var out, errOut bytes.Buffer
		if code := Run(t.Context(), []string{"get", "clusters", "--hub", f.APIURL, "--token", f.AdminToken}, &out, &errOut); code != 1 {
			t.Errorf("get clusters without --ca: exit %d, want 1", code)
		}
		if !strings.Contains(errOut.String(), "certificate signed by unknown authority") || !strings.Contains(errOut.String(), "Hint: the hub's certificate is signed by its own CA: give it with --ca") {
			t.Errorf("get clusters without --ca:\n%s", errOut.String())
		}
	})

	t.Run("watch usage errors", func(t *testing.T) {
		for _, args := range [][]string{{"status", "--watch", "-o", "json"}, {"status", "--watch", "--interval", "0s"}} {
			var out, errOut bytes.Buffer
			if code := Run(t.Context(), append(args, conn...), &out, &errOut); code != 2 {
				t.Errorf("flotilla %s: exit %d, want 2: %s", strings.Join(args, " "), code, errOut.String())
			}
		}
	})
}

func TestStatusHeader(t *testing.T) {
	t.Parallel()
	const inForce = "1a2b3c4d5e6f7081920a1b2c3d4e5f6071829304"
	tests := []struct {
		name  string
		fleet hubclient.FleetStatus
		want  string
	}{
		{name: "nothing wrong", fleet: hubclient.FleetStatus{Revision: inForce}, want: ""},
		{
			name:  "rejected",
			fleet: hubclient.FleetStatus{Revision: inForce, Error: "fleet/releases.yaml@272e309 line 38: document 2: yaml: did not find expected key"},
			want:  "Fleet configuration error (revision 1a2b3c4 stays in force): fleet/releases.yaml@272e309 line 38: document 2: yaml: did not find expected key\n\n",
		},
		{
			name: "rejected while its manifests roll out",
			fleet: hubclient.FleetStatus{Revision: inForce, Error: "fleet/releases.yaml@272e309 line 38: document 2: yaml: did not find expected key",
				RolloutNotice: "Commit 272e309 rolls out through source 'platform' (same repository as the fleet) although its fleet configuration was rejected: clusters get its manifests with the release settings of 1a2b3c4."},
			want: "Fleet configuration error (revision 1a2b3c4 stays in force): fleet/releases.yaml@272e309 line 38: document 2: yaml: did not find expected key\n" +
				"Commit 272e309 rolls out through source 'platform' (same repository as the fleet) although its fleet configuration was rejected: clusters get its manifests with the release settings of 1a2b3c4.\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			printStatusHeader(&b, hubclient.StatusView{Fleet: tt.fleet})
			if b.String() != tt.want {
				t.Errorf("header:\n got %q\nwant %q", b.String(), tt.want)
			}
		})
	}
}

// pollCounter fronts the hub's API with a TLS server of its own that passes every request on
// and counts the status requests.
type pollCounter struct {
	url, caPath string
	polls       atomic.Int64
}

func startPollCounter(t *testing.T, f *hubtest.Fleet) *pollCounter {
	t.Helper()
	hubURL, err := url.Parse(f.APIURL)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(f.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", f.CAPath)
	}
	rp := httputil.NewSingleHostReverseProxy(hubURL)
	toHub := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	t.Cleanup(toHub.CloseIdleConnections)
	rp.Transport = toHub
	p := &pollCounter{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/status" {
			p.polls.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	p.caPath = filepath.Join(t.TempDir(), "proxy-ca.crt")
	if err := os.WriteFile(p.caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
