// Package hubtest starts a real hub with a large, seeded fleet for tests and benchmarks of the
// fleet views (flotilla status, skew, drift, the dashboard), the way net/http/httptest starts
// a server: everything is stopped by tb.Cleanup.
package hubtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Options size the seeded fleet. Zero values take the defaults.
type Options struct {
	// Clusters is how many clusters are registered. Default 1000.
	Clusters int
	// Releases is how many releases the fleet configuration holds, every one from the same Git
	// source and targeting every cluster. Default 20.
	Releases int
	// Hub is passed to hub.New; DataDir, Fleet and the listen addresses are set by Start
	// (loopback, free ports). UnreachableAfter defaults to one hour here, so that a long
	// benchmark does not turn the whole fleet unreachable while it runs; the seeded
	// unreachable clusters were last seen two hours before Start.
	Hub hub.Options
}

// Fleet is a running hub with a seeded fleet.
type Fleet struct {
	// APIURL, AdminToken and CAPath are what a client needs: flotilla --hub APIURL --token
	// AdminToken --ca CAPath, or hubclient.Config{Hub: APIURL, Token: AdminToken, CAFile: CAPath}.
	APIURL     string
	AdminToken string
	CAPath     string
	Hub        *hub.Hub
	// Store is the hub's store, for tests that seed more.
	Store store.Store
	// Clusters ("cluster-0000", ...) and Releases ("release-00", ...) in name order.
	Clusters []string
	Releases []string
	// Revision is the source revision every assignment desires ("main@sha1:...").
	Revision string
	// Seeded is every status written into the store, one per assignment, in cluster then
	// release order; see [Seed] for the mix.
	Seeded []store.AssignmentStatus
	// Unreachable are the clusters whose agent was last seen two hours before Start.
	Unreachable []string
}

// Start starts a real hub (hub.New and Run, SQLite store, temp data dir) whose fleet
// directory has opts.Releases releases from one local Git source, each targeting every
// cluster; registers opts.Clusters clusters; waits until the hub's controller has written
// every cluster's desired state with every release assigned; and then seeds one reported
// status per assignment straight into the store with store.IngestReport (see [Seed] for the
// mix of Ready, Progressing, Failed, drifted and conflicted). No agent runs: clusters are
// registered in the store before the hub starts, and last seen times are written with
// store.TouchCluster. It fails tb if any step fails, and stops the hub when the test ends.
//
// With the defaults (1,000 clusters x 20 releases) it took 8.5 s on a busy 2-core machine.
func Start(tb testing.TB, opts Options) *Fleet {
	tb.Helper()
	if opts.Clusters <= 0 {
		opts.Clusters = 1000
	}
	if opts.Releases <= 0 {
		opts.Releases = 20
	}
	if opts.Hub.UnreachableAfter <= 0 {
		opts.Hub.UnreachableAfter = time.Hour
	}
	ctx := context.Background()
	dir := tb.TempDir()
	f := &Fleet{}
	for i := range opts.Clusters {
		f.Clusters = append(f.Clusters, fmt.Sprintf("cluster-%04d", i))
	}
	for j := range opts.Releases {
		f.Releases = append(f.Releases, fmt.Sprintf("release-%02d", j))
	}
	fleetDir := filepath.Join(dir, "fleet")
	if err := writeFleet(fleetDir, filepath.Join(dir, "apps"), f.Releases); err != nil {
		tb.Fatalf("hubtest: %v", err)
	}

	dataDir := filepath.Join(dir, "hub")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "hub.db"))
	if err != nil {
		tb.Fatalf("hubtest: open store: %v", err)
	}
	f.Store = st
	now := time.Now()
	for i, name := range f.Clusters {
		c := store.Cluster{Name: name, Labels: map[string]string{"env": []string{"prod", "staging"}[i%2], "region": []string{"eu", "us", "ap"}[i%3]}, CreatedAt: now}
		if err := st.AddCluster(ctx, c); err != nil {
			_ = st.Close() // already failing: the first error is the one returned
			tb.Fatalf("hubtest: add cluster %s: %v", name, err)
		}
	}

	ho := opts.Hub
	ho.DataDir, ho.Fleet = dataDir, fleetDir
	ho.AllowFileSources = append(ho.AllowFileSources, filepath.Join(dir, "apps")) // the file:// source
	ho.AgentAddr, ho.APIAddr = "127.0.0.1:0", "127.0.0.1:0"
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
	f.Hub, f.APIURL, f.AdminToken, f.CAPath = h, h.APIURL(), h.AdminToken(), h.CAPath()

	desired, err := waitDesired(ctx, st, f.Clusters, len(f.Releases), 2*time.Minute)
	if err != nil {
		tb.Fatalf("hubtest: %v", err)
	}
	f.Revision = desired[f.Clusters[0]][0].Revision
	for i, name := range f.Clusters {
		seen := now
		if unreachable(i) {
			seen = now.Add(-2 * time.Hour)
			f.Unreachable = append(f.Unreachable, name)
		}
		if err := st.TouchCluster(ctx, name, seen, "v0.0.0-hubtest"); err != nil {
			tb.Fatalf("hubtest: touch cluster %s: %v", name, err)
		}
		statuses := make([]store.AssignmentStatus, 0, len(desired[name]))
		for j, a := range desired[name] {
			statuses = append(statuses, Seed(i, j, name, a, now))
		}
		if _, err := st.IngestReport(ctx, name, 1, statuses); err != nil {
			tb.Fatalf("hubtest: seed report of cluster %s: %v", name, err)
		}
		f.Seeded = append(f.Seeded, statuses...)
	}
	return f
}

// unreachable: every 50th cluster (cluster-0049, cluster-0099, ...) went silent.
func unreachable(i int) bool { return i%50 == 49 }

// OldRevision and OldDigest are what the seeded Progressing assignments still run.
const (
	OldRevision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
	OldDigest   = "sha256:00000000000000000000000000000000000000000000000000000000000000aa"
)

// Seed is the status seeded for release j (of the desired state a) on cluster i, name:
//   - i%10 == 3: Progressing, still on OldRevision (a skew of 10% on every release);
//   - i%20 == 7: Failed on the desired revision, with an error;
//   - i%10 == 5: Ready, and ConfigMap/settings-<release> in namespace "apps" had data.level
//     changed by hand: healed when j is even, only reported (Drifted) when j is odd;
//   - i%25 == 11 and j == 0 (otherwise Ready): Failed with one conflict, as the agent
//     reports a field another manager owns;
//   - otherwise Ready on the desired revision, healthy.
func Seed(i, j int, name string, a desired.Assignment, now time.Time) store.AssignmentStatus {
	s := store.AssignmentStatus{
		Cluster: name, Release: a.Release, ObservedGeneration: 1, Revision: a.Revision, Digest: a.Digest,
		Phase: string(hubclient.PhaseReady), Health: "Current", Objects: 2, ReportedAt: now, UpdatedAt: now,
	}
	report := &agentv1.AssignmentStatus{Release: a.Release, Generation: 1, Objects: 2}
	switch {
	case i%10 == 3:
		s.Revision, s.Digest = OldRevision, OldDigest
	case i%20 == 7:
		s.Phase, s.Health, s.Error = string(hubclient.PhaseFailed), "Failed", fmt.Sprintf("ConfigMap/apps/settings-%s apply failed: admission webhook denied the request", a.Release)
	case i%10 == 5:
		// As the agent does: Drifted only for drift left in place, healed drift is in the
		// detail alone.
		s.Drifted = j%2 == 1
		report.Drift = []*agentv1.DriftedObject{{Object: "configmap/settings-" + a.Release, Namespace: "apps", Paths: []string{".data.level"}, Healed: j%2 == 0}}
	case i%25 == 11 && j == 0:
		// As the agent does: a conflict fails the assignment.
		conflict := fmt.Sprintf(`configmap/settings-%s in namespace "apps": .data.level owned by field manager "kubectl-edit"`, a.Release)
		s.Phase, s.Conflicts, s.Error = string(hubclient.PhaseFailed), 1, "conflict: "+conflict
		report.Conflicts = []string{conflict}
	}
	report.Revision, report.Digest, report.Phase, report.Health, report.Drifted, report.Error = s.Revision, s.Digest, s.Phase, s.Health, s.Drifted, s.Error
	// Detail is what the hub stores for a real report: the agent's AssignmentStatus as JSON.
	s.Detail, _ = protojson.Marshal(report)
	return s
}

// writeFleet writes the fleet directory (one Source, one Release per name) and the Git
// repository the source reads (one ConfigMap per release).
func writeFleet(fleetDir, repoDir string, releases []string) error {
	r, err := git.PlainInitWithOptions(repoDir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		return fmt.Errorf("source repository %s: %w", repoDir, err)
	}
	var rel strings.Builder
	for _, name := range releases {
		p := filepath.Join(repoDir, "apps", name, "settings.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-%s\ndata:\n  level: info\n", name)
		if err := os.WriteFile(p, []byte(cm), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&rel, "---\napiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata:\n  name: %s\nspec:\n  source: apps\n  path: apps/%s\n  targets:\n    - selector: {}\n  namespace: apps\n  createNamespace: true\n  prune: true\n", name, name)
	}
	wt, err := r.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddGlob("."); err != nil {
		return err
	}
	if _, err := wt.Commit("apps", &git.CommitOptions{Author: &object.Signature{Name: "hubtest", Email: "hubtest@flotilla.dev", When: time.Now()}}); err != nil {
		return fmt.Errorf("source repository %s: commit: %w", repoDir, err)
	}
	if err := os.MkdirAll(fleetDir, 0o755); err != nil {
		return err
	}
	src := fmt.Sprintf("apiVersion: flotilla.dev/v1alpha1\nkind: Source\nmetadata:\n  name: apps\nspec:\n  git:\n    url: file://%s\n    branch: main\n  interval: 1h\n", repoDir)
	if err := os.WriteFile(filepath.Join(fleetDir, "sources.yaml"), []byte(src), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(fleetDir, "releases.yaml"), []byte(rel.String()), 0o644)
}

// waitDesired polls the store until every cluster's desired state holds n assignments and
// returns them by cluster.
func waitDesired(ctx context.Context, st store.Store, clusters []string, n int, timeout time.Duration) (map[string][]desired.Assignment, error) {
	start := time.Now()
	out := make(map[string][]desired.Assignment, len(clusters))
	for _, name := range clusters {
		var undecodable error // ends the wait at once: waiting would not make it decode
		err := eventually.Poll(ctx, timeout-time.Since(start), func() error {
			ds, err := st.GetDesiredState(ctx, name)
			if err != nil {
				return fmt.Errorf("cluster %s: no desired state with %d assignments written (last error: %w)", name, n, err)
			}
			as, err := desired.Decode(ds.Document)
			if err != nil {
				undecodable = fmt.Errorf("desired state of cluster %s: %w", name, err)
				return nil
			}
			if len(as) != n {
				return fmt.Errorf("cluster %s: desired state with %d assignments, want %d", name, len(as), n)
			}
			out[name] = as
			return nil
		})
		if undecodable != nil {
			return nil, undecodable
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
