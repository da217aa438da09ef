package clustertest_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

// oneTest stands for a test that takes clusters from a pool: its cleanups run at end, and
// it has failed if failed is set.
type oneTest struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (o *oneTest) Cleanup(f func()) { o.cleanups = append(o.cleanups, f) }
func (o *oneTest) Failed() bool     { return o.failed }
func (o *oneTest) end() {
	for i := len(o.cleanups) - 1; i >= 0; i-- {
		o.cleanups[i]()
	}
}

func TestPoolReusesOnlyWhatItCouldReset(t *testing.T) {
	t.Parallel()
	pool := clustertest.NewPool("pooltest")
	t.Cleanup(func() {
		if _, err := pool.Close(); err != nil {
			t.Error(err)
		}
	})

	first := &oneTest{TB: t}
	c := pool.Take(first, 1)[0]
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.end()

	second := &oneTest{TB: t}
	if again := pool.Take(second, 1)[0]; again != c {
		t.Fatalf("the second test got cluster %s, want %s back from the pool", again.Name(), c.Name())
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "mine", metav1.GetOptions{}); err == nil {
		t.Error("the first test's namespace is still there for the second")
	}
	// A failed test's cluster may hold what made it fail: it is not handed out again.
	second.failed = true
	second.end()
	if err := c.Ready(t.Context()); err == nil {
		t.Error("the cluster of a failed test still runs")
	}

	third := &oneTest{TB: t}
	if fresh := pool.Take(third, 1)[0]; fresh == c {
		t.Error("the third test got the failed test's cluster")
	}
	third.end()
	summary, err := pool.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 clusters started", "1 taken again after a reset", "1 stopped early"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q does not say %q", summary, want)
		}
	}
}
