package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/faultproxy"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/pgtest"
)

// cuttingStore is a replica's PostgreSQL store that, once armed, cuts the replica's database
// connections (through the fault proxy) the moment one of the armed operations starts, and
// refuses new ones until that operation has returned: the connection dies in the middle of a
// reschedule, on the real driver. The database is back at once after that operation: the pool
// drops its dead connections before the hub's next call, so that only the cut operation fails,
// like one SQLITE_BUSY.
type cuttingStore struct {
	*store.Postgres
	proxy *faultproxy.Proxy
	mu    sync.Mutex
	armed map[string]bool
	cuts  []string
}

func (s *cuttingStore) arm(ops ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		s.armed[op] = true
	}
}

func (s *cuttingStore) cutDuring(op string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed[op] {
		return func() {}
	}
	s.armed = map[string]bool{} // one cut
	s.cuts = append(s.cuts, op)
	s.proxy.Refuse(true)
	s.proxy.Cut()
	return func() {
		s.proxy.Refuse(false)
		for range 20 { // each failed call drops one dead connection from the pool
			if _, err := s.Postgres.ListClusters(context.Background()); err == nil {
				return
			}
		}
	}
}

func (s *cuttingStore) cutOps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cuts...)
}

func (s *cuttingStore) ListClusters(ctx context.Context) ([]store.Cluster, error) {
	defer s.cutDuring("ListClusters")()
	return s.Postgres.ListClusters(ctx)
}

func (s *cuttingStore) GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error) {
	defer s.cutDuring("GetDesiredState")()
	return s.Postgres.GetDesiredState(ctx, cluster)
}

func (s *cuttingStore) ListDesiredStates(ctx context.Context) ([]store.DesiredState, error) {
	defer s.cutDuring("ListDesiredStates")()
	return s.Postgres.ListDesiredStates(ctx)
}

func (s *cuttingStore) PutDesiredState(ctx context.Context, cluster string, doc []byte) (int64, bool, error) {
	defer s.cutDuring("PutDesiredState")()
	return s.Postgres.PutDesiredState(ctx, cluster, doc)
}

// TestHAConnectionCutMidReschedulePrunesNothing runs two hub replicas on one PostgreSQL
// database. Replica-1 holds the controller lease; replica-2 reaches the database through a
// fault proxy and serves the agent. The source of release "baseline" then becomes
// unreachable and replica-1 stops: replica-2 takes the lease over with no artifact of
// baseline in memory, and its database connection is cut in the middle of its first
// reschedule. Baseline must stay assigned, and applied on the real cluster; a later commit
// still rolls out.
func TestHAConnectionCutMidReschedulePrunesNothing(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	srcDir, markerDir, fleetDir, root := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	newRepo(t, srcDir, map[string]string{
		"baseline/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {residency: eu-only}\n",
	})
	markers := newRepo(t, markerDir, map[string]string{"marker-0/cm.yaml": marker(0)})
	fleetRepo := newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": storeFaultFleet(srcDir, markerDir, 0)})
	dsn, proxied, proxy := pgtest.BehindProxy(t)
	cluster := clustertest.StartAll(t, "eu-1")["eu-1"]

	var adminToken string
	startReplica := func(id, dsn string, wrap func(*store.Postgres) store.Store) (*hub.Hub, *hubclient.Client, func()) {
		t.Helper()
		pg, err := store.OpenPostgres(t.Context(), dsn, store.PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := hub.New(t.Context(), hub.Options{
			DataDir: filepath.Join(root, id), Fleet: "file://" + fleetDir, FleetBranch: "main", FleetPath: "fleet",
			AgentAddr: "127.0.0.1:0", APIAddr: "127.0.0.1:0", FleetInterval: 300 * time.Millisecond,
			AllowFileSources: []string{filepath.Dir(fleetDir)},
			Replica:          hub.ReplicaOptions{ID: id, LeaseTTL: 3 * time.Second, SecretsKeyFile: secretsKeyFile(t, root)},
			Logger:           (&fleet{}).logger(id),
		}, wrap(pg))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = h.Run(ctx) }()
		var once sync.Once
		stop := func() { once.Do(func() { cancel(); <-done; pg.Close() }) }
		t.Cleanup(stop)
		if adminToken == "" {
			adminToken = h.AdminToken() // the first replica's: those that join hold its hash only
		}
		client, err := hubclient.NewClient(hubclient.Config{Hub: h.APIURL(), Token: adminToken, CAFile: h.CAPath()})
		if err != nil {
			t.Fatal(err)
		}
		return h, client, stop
	}
	plain := func(pg *store.Postgres) store.Store { return pg }
	r1, _, stopR1 := startReplica("replica-1", dsn, plain)
	eventually.Within(t, 30*time.Second, eventually.True("replica-1 holds the controller lease", r1.IsLeader))
	var cutting *cuttingStore
	r2, client, _ := startReplica("replica-2", proxied, func(pg *store.Postgres) store.Store {
		cutting = &cuttingStore{Postgres: pg, proxy: proxy, armed: map[string]bool{}}
		return cutting
	})

	j, err := client.AddCluster(t.Context(), "eu-1", map[string]string{"env": "prod"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(t.Context(), agent.Options{
		HubURL: r2.AgentURL(), JoinToken: j.JoinToken, RESTConfig: cluster.RESTConfig(),
		StateDir: filepath.Join(root, "agent"), Logger: (&fleet{}).logger("agent"),
		HeartbeatInterval: time.Second, ReportInterval: 200 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		if err := a.Run(ctx); err != nil {
			t.Errorf("agent: %v", err)
		}
		a.Close()
	}()
	t.Cleanup(func() { cancel(); <-agentDone })

	f := &fleet{t: t, client: client}
	f.waitStatus("first convergence", 90*time.Second, converged("", map[string][]string{"eu-1": {"baseline", "marker-0"}}))
	if _, ok := configMapData(t, cluster, "platform-system", "platform-settings", "residency"); !ok {
		t.Fatal("baseline's ConfigMap was not applied")
	}

	if err := os.Rename(srcDir, srcDir+".gone"); err != nil {
		t.Fatal(err)
	}
	// The cut comes when the take-over reschedule reads or writes desired states, after it
	// listed the clusters: the middle of it.
	cutting.arm("ListDesiredStates", "GetDesiredState", "PutDesiredState")
	stopR1()
	eventually.Within(t, 30*time.Second, eventually.True("replica-2 takes the controller lease over", r2.IsLeader))
	eventually.Within(t, 30*time.Second, eventually.True("a database connection cut in the middle of a reschedule", func() bool { return len(cutting.cutOps()) > 0 }))
	t.Logf("replica-2's database connections were cut during %v", cutting.cutOps())

	markers.commit("marker 1", map[string]string{"marker-1/cm.yaml": marker(1)})
	fleetRepo.commit("marker-1", map[string]string{"fleet/fleet.yaml": storeFaultFleet(srcDir, markerDir, 1)})
	st := f.waitStatus("marker-1 applied", 90*time.Second, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Release == "marker-1" && a.Phase == "Ready" && a.AppliedRevision == a.DesiredRevision {
				return true
			}
		}
		return false
	})
	if _, ok := configMapData(t, cluster, "platform-system", "platform-settings", "residency"); !ok {
		t.Fatal("after the connection cut, baseline's ConfigMap was pruned from the cluster")
	}
	if !assigned(st, "baseline", "eu-1") {
		t.Fatalf("after the connection cut, baseline is no longer assigned:\n%s", dump(st))
	}
}
