package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flotilla/flotilla/internal/localcluster"
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

// parseObjects reads multi-document YAML.
func parseObjects(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("parse test YAML: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
