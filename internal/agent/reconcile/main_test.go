package reconcile

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

// One real API server for the package; every test works in namespaces and assignments of its
// own (the fluxcd/pkg ssa tests do the same).
var (
	testCluster *localcluster.Cluster
	testSeq     atomic.Int64
)

func TestMain(m *testing.M) {
	c, err := localcluster.Start(context.Background(), localcluster.Options{Name: "reconcile-test"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// uniqueName returns a name no other test uses: for namespaces and assignments.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, testSeq.Add(1))
}

func newTestReconciler(t *testing.T) *Reconciler {
	t.Helper()
	r, err := New(testCluster.RESTConfig(), Config{PollInterval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	return kubernetes.NewForConfigOrDie(restConfig())
}

func restConfig() *rest.Config {
	cfg := testCluster.RESTConfig()
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// parse reads multi-document YAML, with {{ns}} replaced by namespace.
func parse(t *testing.T, namespace, docs string) []*unstructured.Unstructured {
	t.Helper()
	return clustertest.Objects(t, strings.ReplaceAll(docs, "{{ns}}", namespace))
}

func mustReconcile(t *testing.T, r *Reconciler, objs []*unstructured.Unstructured, opts Options) *Result {
	t.Helper()
	res, err := r.Reconcile(t.Context(), objs, opts)
	if err != nil {
		t.Fatalf("reconcile: %v\n%s", err, res)
	}
	return res
}

// actions maps "kind/name" to the action, for compact assertions.
func actions(res *Result) map[string]Action {
	m := map[string]Action{}
	for _, o := range res.Objects {
		m[o.ObjectRef.String()] = o.Action
	}
	return m
}
