package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/render"
)

// One real API server for the package's scenario tests, started by the first test that asks
// for it (the unit tests need none); every test works in namespaces of its own.
var (
	clusterOnce sync.Once
	cluster     *localcluster.Cluster
	clusterErr  error
	testSeq     atomic.Int64
)

func TestMain(m *testing.M) {
	render.RunChildIfRequested() // the agent's render Sandbox runs this binary as its child
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// testCluster returns the package's API server, starting it on first use.
func testCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		cluster, clusterErr = localcluster.Start(context.Background(), localcluster.Options{Name: "agent-test"})
	})
	if clusterErr != nil {
		t.Fatalf("start local cluster: %v", clusterErr)
	}
	return cluster
}

// uniqueName returns a name no other test uses: for namespaces and releases.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, testSeq.Add(1))
}
