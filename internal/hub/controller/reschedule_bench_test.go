package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/replica"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// benchReleases is the number of releases every cluster of the benchmarks runs.
const benchReleases = 20

// BenchmarkReschedule measures a reschedule after a new source revision, which changes every
// cluster's desired state, at 480 and 10,000 clusters of 20 releases each, on SQLite and on
// PostgreSQL: the whole reschedule (ns/op, µs/cluster) and the parts of it spent writing
// desired states to the store (store-ms/op) and telling the watches (notify-ms/op: on
// PostgreSQL the other replicas' NOTIFY); compute-ms/op is the rest (scheduling, encoding).
//
// path=per-cluster is how the hub did it before batching (one transaction and one NOTIFY per
// cluster), kept as the baseline: compare it with path=batched in the same run.
//
//	go test -run '^$' -bench 'BenchmarkReschedule' -benchtime 3x ./internal/hub/controller
func BenchmarkReschedule(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		for _, n := range []int{480, 10000} {
			b.Run(fmt.Sprintf("store=%s/clusters=%d", kind, n), func(b *testing.B) {
				fx := newRescheduleFixture(b, kind, n)
				for _, path := range []string{"per-cluster", "batched"} {
					b.Run("path="+path, func(b *testing.B) { fx.benchReschedule(b, path) })
				}
				b.Run("op=loadplan", fx.benchLoadPlan)
			})
		}
	}
}

// rescheduleFixture is a store with n registered clusters, every one matched by the 20
// releases of a fleet in a directory.
type rescheduleFixture struct {
	kind     string
	arts     *artifact.Store // the source's artifacts, packed as a poll would
	st       store.Store
	pg       *store.Postgres // kind postgres
	fleetDir string
	clusters int
	rev      int // the source revision last scheduled
}

func newRescheduleFixture(b *testing.B, kind string, n int) *rescheduleFixture {
	ctx := b.Context()
	fx := &rescheduleFixture{kind: kind, fleetDir: b.TempDir(), clusters: n}
	arts, err := artifact.NewStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fx.arts = arts
	switch kind {
	case "sqlite":
		s, err := store.OpenSQLite(ctx, filepath.Join(b.TempDir(), "hub.db"))
		if err != nil {
			b.Fatal(err)
		}
		fx.st = s
	case "postgres":
		s, err := store.OpenPostgres(ctx, pgtest.NewDatabase(b), store.PostgresOptions{})
		if err != nil {
			b.Fatal(err)
		}
		fx.st, fx.pg = s, s
	}
	b.Cleanup(func() { fx.st.Close() })
	var fleet strings.Builder
	fleet.WriteString(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: https://git.example.com/platform.git, branch: main}
`)
	for i := range benchReleases {
		fmt.Fprintf(&fleet, `---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: release-%02d}
spec:
  source: platform
  path: apps/release-%02d
  variables: {replicas: "3", log_level: info}
  targets: [{selector: {matchLabels: {env: production}}}]
`, i, i)
	}
	if err := os.WriteFile(filepath.Join(fx.fleetDir, "fleet.yaml"), []byte(fleet.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	regions := []string{"eu", "us", "ap", "sa"}
	now := time.Now()
	for i := range n {
		c := store.Cluster{Name: fmt.Sprintf("cluster-%05d", i), CreatedAt: now,
			Labels: map[string]string{"env": "production", "region": regions[i%len(regions)]}}
		if err := fx.st.AddCluster(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	// The first reschedule stores every cluster's first desired state.
	c, _ := fx.controller(b, "batched")
	fx.schedule(b, c)
	return fx
}

// timedStore adds up the time spent writing desired states one by one, as the controller
// did before batching: it has no PutDesiredStates.
type timedStore struct {
	Store
	put time.Duration
}

func (s *timedStore) PutDesiredState(ctx context.Context, cluster string, doc []byte) (int64, bool, error) {
	defer func(start time.Time) { s.put += time.Since(start) }(time.Now())
	return s.Store.PutDesiredState(ctx, cluster, doc)
}

// timedBatchStore is a timedStore that writes desired states in batches.
type timedBatchStore struct {
	*timedStore
	batch interface {
		PutDesiredStates(ctx context.Context, writes []store.DesiredWrite) []store.DesiredWritten
	}
}

func (s timedBatchStore) PutDesiredStates(ctx context.Context, writes []store.DesiredWrite) []store.DesiredWritten {
	defer func(start time.Time) { s.put += time.Since(start) }(time.Now())
	return s.batch.PutDesiredStates(ctx, writes)
}

// rescheduleRun is what one controller of the benchmark spent, besides computing.
type rescheduleRun struct {
	st     *timedStore
	notify time.Duration
}

// controller returns a controller on the fixture's store that writes and notifies along path.
// On PostgreSQL, per-cluster sends each cluster's NOTIFY as the hub did before batching; batched
// hands the clusters to the replica's fan-out, which batches them.
func (fx *rescheduleFixture) controller(b *testing.B, path string) (*Controller, *rescheduleRun) {
	run := &rescheduleRun{st: &timedStore{Store: fx.st}}
	var st Store = run.st
	if path == "batched" {
		st = timedBatchStore{timedStore: run.st, batch: fx.st.(interface {
			PutDesiredStates(ctx context.Context, writes []store.DesiredWrite) []store.DesiredWritten
		})}
	}
	watchers := agentapi.NewWatchers()
	if fx.pg != nil {
		watchers.OnNotify = fx.notifier(b, path)
	}
	c, err := New(Deps{Store: st, Poller: downPoller{}, Artifacts: fx.arts, Lease: heldLease{},
		DesiredChanged: func(cluster string) {
			defer func(start time.Time) { run.notify += time.Since(start) }(time.Now())
			watchers.Notify(cluster)
		}}, Options{Fleet: fx.fleetDir, WorkDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if !c.loadFleet(b.Context()) {
		b.Fatalf("the benchmark's fleet did not load: %v", c.problems)
	}
	return c, run
}

// notifier tells the other replicas of a cluster's change along path: per-cluster sends its
// NOTIFY at once, as the hub did before batching; batched queues it in a replica's outbox.
func (fx *rescheduleFixture) notifier(b *testing.B, path string) func(string) {
	if path == "batched" {
		r, err := replica.New(b.Context(), replica.Config{Store: fx.pg, Options: replica.Options{ID: "bench"},
			Identity: replica.Identity{DataDir: b.TempDir(), Create: func() error { return nil }}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx, replica.Handlers{}) }()
		b.Cleanup(func() { cancel(); <-done })
		return func(cluster string) { r.Publish(replica.Event{Kind: replica.EventDesired, Cluster: cluster}) }
	}
	return func(cluster string) {
		payload, _ := json.Marshal(replica.Event{Replica: "bench", Kind: replica.EventDesired, Cluster: cluster})
		if err := fx.pg.Publish(context.Background(), string(payload)); err != nil {
			b.Error(err)
		}
	}
}

// schedule reschedules c at the next source revision, whose artifact has a manifest of its
// own in every release's path: every cluster's document changes.
// It returns how long the reschedule took.
func (fx *rescheduleFixture) schedule(b *testing.B, c *Controller) time.Duration {
	b.StopTimer()
	fx.rev++
	src := b.TempDir()
	for i := range benchReleases {
		dir := filepath.Join(src, "apps", fmt.Sprintf("release-%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: release-%02d}\ndata: {revision: %q}\n", i, fx.revision())
		if err := os.WriteFile(filepath.Join(dir, "configmap.yaml"), []byte(cm), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	digest, _, err := fx.arts.PutDir(b.Context(), src)
	if err != nil {
		b.Fatal(err)
	}
	c.mu.Lock()
	c.artifacts["platform"] = schedule.Artifact{Source: "platform", URL: "https://git.example.com/platform.git",
		Revision: fx.revision(), Digest: digest}
	c.mu.Unlock()
	b.StartTimer()
	start := time.Now()
	c.reschedule(b.Context())
	took := time.Since(start)
	if !c.retryAt.IsZero() {
		b.Fatal("the reschedule failed: see the log")
	}
	return took
}

func (fx *rescheduleFixture) revision() string { return fmt.Sprintf("main@sha1:%040d", fx.rev) }

func (fx *rescheduleFixture) benchReschedule(b *testing.B, path string) {
	c, run := fx.controller(b, path)
	fx.schedule(b, c) // loads the plan: not part of what is measured
	run.st.put, run.notify = 0, 0
	var total time.Duration
	cpu := cpuTime()
	for b.Loop() {
		total += fx.schedule(b, c)
	}
	cpu = cpuTime() - cpu
	ops := float64(b.N)
	b.ReportMetric(float64(cpu.Milliseconds())/ops, "cpu-ms/op")
	b.ReportMetric(float64(total.Microseconds())/ops/float64(fx.clusters), "µs/cluster")
	b.ReportMetric(float64(run.st.put.Milliseconds())/ops, "store-ms/op")
	b.ReportMetric(float64(run.notify.Milliseconds())/ops, "notify-ms/op")
	b.ReportMetric(float64((total-run.st.put-run.notify).Milliseconds())/ops, "compute-ms/op")
	fx.checkStored(b, c)
}

// checkStored makes sure every cluster's stored document is at the last revision scheduled.
func (fx *rescheduleFixture) checkStored(b *testing.B, c *Controller) {
	states, err := fx.st.ListDesiredStates(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	want := fx.revision()
	if len(states) != fx.clusters {
		b.Fatalf("%d desired states stored, want %d", len(states), fx.clusters)
	}
	size := 0
	for _, ds := range states {
		size += len(ds.Document)
		doc, err := desired.DecodeDocument(ds.Document)
		if err != nil || len(doc.Assignments) != benchReleases || doc.Assignments[0].Revision != want {
			b.Fatalf("cluster %s: %d assignments (error %v), want %d at %s", ds.Cluster, len(doc.Assignments), err, benchReleases, want)
		}
	}
	b.ReportMetric(float64(size)/float64(len(states)), "doc-bytes")
}

// cpuTime is the CPU time this process has used, user and system: under a load that leaves
// the benchmark a fraction of a core, a steadier figure than the time that passed (it leaves
// out the database server's, which runs in another process).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchLoadPlan measures reading every stored desired state into the plan: what a controller
// does once when it takes the lease (a start, a fail-over). A reschedule reads only the
// clusters registered since.
func (fx *rescheduleFixture) benchLoadPlan(b *testing.B) {
	c, _ := fx.controller(b, "batched")
	var once sync.Once
	for b.Loop() {
		if err := c.loadPlan(b.Context()); err != nil {
			b.Fatal(err)
		}
		once.Do(func() {
			if len(c.plan) != fx.clusters {
				b.Fatalf("plan of %d clusters, want %d", len(c.plan), fx.clusters)
			}
		})
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(fx.clusters), "µs/cluster")
}
