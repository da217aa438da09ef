package hubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/phase"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// RolloutRelease is the name of the one release of StartRollout's fleet.
const RolloutRelease = "web"

// RolloutFleet is a running hub whose one release, RolloutRelease, has a rollout.
type RolloutFleet struct {
	APIURL, AdminToken, CAPath string
	Hub                        *hub.Hub
	Store                      store.Store
	seq                        map[string]uint64
	repo                       string // the source's Git repository
}

// rolloutWebhookSecret is the secret of the hub's generic webhook, which Commit signs with.
const rolloutWebhookSecret = "hubtest-generic-webhook-secret"

// StartRollout starts a real hub (SQLite, temp data dir, no agent) whose fleet holds one
// release, RolloutRelease, from a local Git source with one ConfigMap, targeting every
// cluster, with rolloutYAML as its spec.rollout (a YAML mapping, as in a fleet file), and
// registers clusters (name -> labels). The release's first revision then rolls out along
// its waves; ReportReady stands in for the agents. options may set more of the hub's
// options (OIDC, say). The hub is stopped when the test ends.
func StartRollout(tb testing.TB, rolloutYAML string, clusters map[string]map[string]string, options ...func(*hub.Options)) *RolloutFleet {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	if err := writeFleet(filepath.Join(dir, "fleet"), filepath.Join(dir, "apps"), []string{RolloutRelease}); err != nil {
		tb.Fatalf("hubtest: %v", err)
	}
	// The release as writeFleet writes it, with the rollout under its spec.
	rel := filepath.Join(dir, "fleet", "releases.yaml")
	data, err := os.ReadFile(rel)
	if err != nil {
		tb.Fatal(err)
	}
	indented := "  rollout:\n    " + strings.ReplaceAll(strings.TrimSpace(rolloutYAML), "\n", "\n    ") + "\n"
	if err := os.WriteFile(rel, append(data, indented...), 0o644); err != nil {
		tb.Fatal(err)
	}
	dataDir := filepath.Join(dir, "hub")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "hub.db"))
	if err != nil {
		tb.Fatalf("hubtest: open store: %v", err)
	}
	now := time.Now()
	for name, labels := range clusters {
		if err := st.AddCluster(ctx, store.Cluster{Name: name, Labels: labels, CreatedAt: now}); err != nil {
			_ = st.Close() // already failing: the first error is the one returned
			tb.Fatalf("hubtest: add cluster %s: %v", name, err)
		}
	}
	ho := hub.Options{
		DataDir: dataDir, Fleet: filepath.Join(dir, "fleet"), AllowFileSources: []string{filepath.Join(dir, "apps")},
		AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", UnreachableAfter: time.Hour,
		WebhookSecrets: map[string]string{"generic": rolloutWebhookSecret},
	}
	for _, o := range options {
		o(&ho)
	}
	h, err := hub.New(ctx, ho, st)
	if err != nil {
		_ = st.Close() // already failing: the first error is the one returned
		tb.Fatalf("hubtest: new hub: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Run(runCtx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("hubtest: hub: %v", err)
		}
		if err := st.Close(); err != nil {
			tb.Errorf("hubtest: close store: %v", err)
		}
	})
	for name := range clusters {
		if err := st.TouchCluster(ctx, name, now, "v0.0.0-hubtest"); err != nil {
			tb.Fatalf("hubtest: touch cluster %s: %v", name, err)
		}
	}
	return &RolloutFleet{APIURL: h.APIURL(), AdminToken: h.AdminToken(), CAPath: h.CAPath(), Hub: h, Store: st, seq: map[string]uint64{}, repo: filepath.Join(dir, "apps")}
}

// Desired waits until cluster's desired state assigns RolloutRelease and returns that
// assignment.
func (f *RolloutFleet) Desired(tb testing.TB, cluster string) desired.Assignment {
	tb.Helper()
	return f.DesiredAt(tb, cluster, "")
}

// DesiredAt waits until cluster's desired state assigns RolloutRelease at revision (any
// revision for "") and returns that assignment. A rollout's view moves before the
// controller's next reschedule writes what it decided into desired states, so a test that
// reads a cluster's assignment after a rollout step waits for it here.
func (f *RolloutFleet) DesiredAt(tb testing.TB, cluster, revision string) desired.Assignment {
	tb.Helper()
	var got desired.Assignment
	var last string
	eventually.Within(tb, time.Minute, func() error {
		ds, err := f.Store.GetDesiredState(context.Background(), cluster)
		if err == nil {
			as, err := desired.Decode(ds.Document)
			if err != nil {
				tb.Fatalf("hubtest: desired state of cluster %s: %v", cluster, err)
			}
			for _, a := range as {
				if a.Release == RolloutRelease {
					if revision == "" || a.Revision == revision {
						got = a
						return nil
					}
					last = a.Revision
				}
			}
		}
		return fmt.Errorf("hubtest: cluster %s: no assignment of %s at %q (last revision %q, last error: %v)", cluster, RolloutRelease, revision, last, err)
	})
	return got
}

// ReportReady stores, as the hub ingests an agent's report, that cluster applied a (its
// revision and digest) and it is Ready and healthy, and marks the cluster seen now.
func (f *RolloutFleet) ReportReady(tb testing.TB, cluster string, a desired.Assignment) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now()
	report := &agentv1.AssignmentStatus{Release: a.Release, Generation: 1, Revision: a.Revision, Digest: a.Digest,
		Phase: string(hubclient.PhaseReady), Health: "Current", Objects: 1}
	detail, err := protojson.Marshal(report)
	if err != nil {
		tb.Fatal(err)
	}
	f.seq[cluster]++
	s := store.AssignmentStatus{Cluster: cluster, Release: a.Release, ObservedGeneration: 1, Revision: a.Revision, Digest: a.Digest,
		Phase: report.Phase, Health: report.Health, Objects: 1, Detail: detail, ReportedAt: now, UpdatedAt: now}
	if _, err := f.Store.IngestReport(ctx, cluster, f.seq[cluster], []store.AssignmentStatus{s}); err != nil {
		tb.Fatalf("hubtest: report of cluster %s: %v", cluster, err)
	}
	if err := f.Store.TouchCluster(ctx, cluster, now, "v0.0.0-hubtest"); err != nil {
		tb.Fatalf("hubtest: touch cluster %s: %v", cluster, err)
	}
}

// WaitRollout asks the hub for RolloutRelease's rollout until ok accepts it, and returns it.
func (f *RolloutFleet) WaitRollout(tb testing.TB, what string, ok func(phase.RolloutView) bool) phase.RolloutView {
	tb.Helper()
	c, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		tb.Fatal(err)
	}
	var v phase.RolloutView
	eventually.Within(tb, time.Minute, func() error {
		var err error
		v, err = c.Rollout(context.Background(), RolloutRelease)
		if err != nil || !ok(v) {
			return fmt.Errorf("hubtest: rollout of %s: not %s: %+v (%v)", RolloutRelease, what, v, err)
		}
		return nil
	})
	return v
}

// Commit commits a new revision of the release's ConfigMap (data.level = level) to the
// source and tells the hub with its generic webhook, signed, so that it polls at once.
func (f *RolloutFleet) Commit(tb testing.TB, level string) {
	tb.Helper()
	r, err := git.PlainOpen(f.repo)
	if err != nil {
		tb.Fatal(err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-%s\ndata:\n  level: %s\n", RolloutRelease, level)
	if err := os.WriteFile(filepath.Join(f.repo, "apps", RolloutRelease, "settings.yaml"), []byte(cm), 0o644); err != nil {
		tb.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		tb.Fatal(err)
	}
	if err := wt.AddGlob("."); err != nil {
		tb.Fatal(err)
	}
	if _, err := wt.Commit("level "+level, &git.CommitOptions{Author: &object.Signature{Name: "hubtest", Email: "hubtest@flotilla.dev", When: time.Now()}}); err != nil {
		tb.Fatalf("hubtest: commit: %v", err)
	}
	body := fmt.Appendf(nil, `{"url": %q, "branch": "main"}`, "file://"+f.repo)
	mac := hmac.New(sha256.New, []byte(rolloutWebhookSecret))
	mac.Write(body)
	pem, err := os.ReadFile(f.CAPath)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodPost, f.APIURL+"/hooks/generic", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Flotilla-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("hubtest: webhook: %v", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		tb.Fatalf("hubtest: webhook: %s: %s", resp.Status, answer)
	}
}
