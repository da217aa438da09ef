package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// faultyStore fails the next call of each armed operation once, as one SQLITE_BUSY or one
// cut PostgreSQL connection would.
type faultyStore struct {
	store.Store
	mu    sync.Mutex
	armed map[string]bool
}

func (s *faultyStore) arm(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed[op] = true
}

func (s *faultyStore) fired(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.armed[op]
}

func (s *faultyStore) fail(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed[op] {
		return nil
	}
	delete(s.armed, op)
	return fmt.Errorf("%s: injected fault: database is locked (SQLITE_BUSY)", op)
}

func (s *faultyStore) ListClusters(ctx context.Context) ([]store.Cluster, error) {
	if err := s.fail("ListClusters"); err != nil {
		return nil, err
	}
	return s.Store.ListClusters(ctx)
}

func (s *faultyStore) GetDesiredState(ctx context.Context, cluster string) (store.DesiredState, error) {
	if err := s.fail("GetDesiredState"); err != nil {
		return store.DesiredState{}, err
	}
	return s.Store.GetDesiredState(ctx, cluster)
}

func (s *faultyStore) ListDesiredStates(ctx context.Context) ([]store.DesiredState, error) {
	if err := s.fail("ListDesiredStates"); err != nil {
		return nil, err
	}
	return s.Store.ListDesiredStates(ctx)
}

func (s *faultyStore) PutDesiredState(ctx context.Context, cluster string, doc []byte) (int64, bool, error) {
	if err := s.fail("PutDesiredState"); err != nil {
		return 0, false, err
	}
	return s.Store.PutDesiredState(ctx, cluster, doc)
}

// TestStoreFaultAfterRestartPrunesNothing restarts the hub while the source of release
// "baseline" is unreachable, so that no artifact of it is in memory when the first reschedule
// runs, and fails one store operation during that reschedule. Before the fix a failed
// GetDesiredState made the hub store a document without baseline, and the agent pruned it.
// Each case then commits a new release from a reachable source and waits until the agent
// applied it: by then the agent has seen every desired state the hub wrote since the restart.
func TestStoreFaultAfterRestartPrunesNothing(t *testing.T) {
	// Not in parallel: it kills hub processes and replicas and waits on their recovery
	// within fixed bounds, which other fleets on the two cores made it miss (seen in CI).
	srcDir, markerDir, fleetDir := t.TempDir(), t.TempDir(), t.TempDir()
	newRepo(t, srcDir, map[string]string{
		"baseline/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform-settings}\ndata: {residency: eu-only}\n",
	})
	markers := newRepo(t, markerDir, map[string]string{"marker-0/cm.yaml": marker(0)})
	fleetRepo := newRepo(t, fleetDir, map[string]string{"fleet/fleet.yaml": storeFaultFleet(srcDir, markerDir, 0)})

	f := newFleet(t, "file://"+fleetDir, map[string]map[string]string{"eu-1": {"env": "prod"}})
	f.waitStatus("first convergence", 90*time.Second, converged("", map[string][]string{"eu-1": {"baseline", "marker-0"}}))
	if _, ok := configMapData(t, f.clusters["eu-1"], "platform-system", "platform-settings", "residency"); !ok {
		t.Fatal("baseline's ConfigMap was not applied")
	}

	// The platform source goes away: after a restart the hub has no artifact for baseline.
	if err := os.Rename(srcDir, srcDir+".gone"); err != nil {
		t.Fatal(err)
	}
	faulty := &faultyStore{armed: map[string]bool{}}
	f.wrapStore = func(st store.Store) store.Store { faulty.Store = st; return faulty }

	for i, op := range []string{"GetDesiredState", "ListClusters", "ListDesiredStates", "PutDesiredState"} {
		n := i + 1
		t.Run("fails "+op+" once", func(t *testing.T) {
			f.hubStop()
			faulty.arm(op)
			f.startHub()
			eventually.Within(t, 30*time.Second, eventually.True(op+" failed once", func() bool { return faulty.fired(op) }))

			markers.commit(fmt.Sprintf("marker %d", n), map[string]string{fmt.Sprintf("marker-%d/cm.yaml", n): marker(n)})
			fleetRepo.commit(fmt.Sprintf("marker-%d", n), map[string]string{"fleet/fleet.yaml": storeFaultFleet(srcDir, markerDir, n)})
			f.waitStatus(fmt.Sprintf("marker-%d applied", n), 90*time.Second, func(st hubclient.StatusView) bool {
				for _, a := range st.Assignments {
					if a.Release == fmt.Sprintf("marker-%d", n) && a.Cluster == "eu-1" && a.Phase == "Ready" && a.AppliedRevision == a.DesiredRevision {
						return true
					}
				}
				return false
			})

			if _, ok := configMapData(t, f.clusters["eu-1"], "platform-system", "platform-settings", "residency"); !ok {
				t.Fatalf("after %s failed once, baseline's ConfigMap was pruned from the cluster", op)
			}
			st, err := f.client.Status(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !assigned(st, "baseline", "eu-1") {
				t.Fatalf("after %s failed once, baseline is no longer assigned to eu-1:\n%s", op, dump(st))
			}
		})
	}
}

func assigned(st hubclient.StatusView, release, cluster string) bool {
	for _, a := range st.Assignments {
		if a.Release == release && a.Cluster == cluster {
			return true
		}
	}
	return false
}

func marker(n int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: marker-%d}\ndata: {n: \"%d\"}\n", n, n)
}

// storeFaultFleet: baseline from the platform source, and releases marker-0..marker-n from
// the markers source, on every cluster.
func storeFaultFleet(srcDir, markerDir string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec:
  git: {url: "file://%s", branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: markers}
spec:
  git: {url: "file://%s", branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: baseline}
spec:
  source: platform
  path: baseline
  targets: [{selector: {}}]
  namespace: platform-system
  createNamespace: true
  prune: true
`, srcDir, markerDir)
	for i := 0; i <= n; i++ {
		fmt.Fprintf(&b, `---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: marker-%d}
spec:
  source: markers
  path: marker-%d
  targets: [{selector: {}}]
  namespace: markers
  createNamespace: true
  prune: true
`, i, i)
	}
	return b.String()
}
