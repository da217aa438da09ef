package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla/flotilla/internal/localcluster"
)

// BenchmarkApply applies 1,000 small ConfigMaps to one fresh real API server four ways, each
// into a namespace of its own, and reports objects per second for each and flotilla's ratio to
// the bare client (the machine's ceiling) and to kubectl:
//
//   - kubectl apply --server-side (the real kubectl, its default client-side throttling);
//   - a bare client-go program sending server-side apply patches from 16 goroutines, no
//     validation, no inventory: the limit of what the API server takes;
//   - Flux's engine, fluxcd/pkg/ssa ApplyAllStaged, client rate limit lifted;
//   - `flotilla reconcile` (the real binary, dry-run validation, inventory and all).
//
// Then it re-reconciles the same unchanged objects with flotilla and re-applies them with the
// bare client, and reports both times and flotilla's request count for it.
//
//	go test -run '^$' -bench Apply -benchtime 1x ./bench
func BenchmarkApply(b *testing.B) {
	const n = 1000
	flotilla := buildFlotilla(b)
	for b.Loop() {
		c, err := localcluster.Start(b.Context(), localcluster.Options{Name: "bench-apply"})
		if err != nil {
			b.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(unlimited(c))
		for _, ns := range []string{"kubectl", "bare", "flux", "flotilla"} {
			if _, err := cs.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}

		kubectlDir := writeConfigMaps(b, n, "kubectl")
		kubectlTime := timeIt(func() {
			if out, err := c.Kubectl(b.Context(), nil, "apply", "--server-side", "-f", kubectlDir); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		})
		bareTime := timeIt(func() { bareApply(b, cs, n, "bare") })
		fluxTime := timeIt(func() { fluxApply(b, c, n, "flux") })
		dir := writeConfigMaps(b, n, "")
		var first reconcileRun
		flotillaTime := timeIt(func() { first = runReconcile(b, flotilla, c, dir, "flotilla") })
		if first.Result.Requests.Writes < n {
			b.Fatalf("flotilla wrote %d times for %d new objects", first.Result.Requests.Writes, n)
		}

		var again reconcileRun
		unchangedTime := timeIt(func() { again = runReconcile(b, flotilla, c, dir, "flotilla") })
		if again.Result.Requests.Writes != 0 {
			b.Errorf("unchanged re-reconcile wrote %d times", again.Result.Requests.Writes)
		}
		bareAgain := timeIt(func() { bareApply(b, cs, n, "bare") })

		rate := func(d time.Duration) float64 { return n / d.Seconds() }
		b.ReportMetric(rate(kubectlTime), "kubectl-obj/s")
		b.ReportMetric(rate(bareTime), "bare-obj/s")
		b.ReportMetric(rate(fluxTime), "flux-obj/s")
		b.ReportMetric(rate(flotillaTime), "flotilla-obj/s")
		b.ReportMetric(kubectlTime.Seconds()/flotillaTime.Seconds(), "flotilla/kubectl")
		b.ReportMetric(bareTime.Seconds()/flotillaTime.Seconds(), "flotilla/bare")
		b.ReportMetric(fluxTime.Seconds()/flotillaTime.Seconds(), "flotilla/flux")
		b.ReportMetric(unchangedTime.Seconds(), "flotilla-unchanged-s")
		b.ReportMetric(float64(again.Result.Requests.Total), "flotilla-unchanged-requests")
		b.ReportMetric(bareAgain.Seconds(), "bare-reapply-s")
		b.Logf("flotilla first reconcile: %+v (process %.1fs); unchanged: %+v (process %.1fs, in-engine %.2fs)",
			first.Result.Requests, flotillaTime.Seconds(), again.Result.Requests, unchangedTime.Seconds(), again.Result.Seconds)
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReconcileMemory reconciles 6,500 ConfigMaps (one spoke of the argocd-agent scale
// test) with the flotilla binary and reports its peak resident memory.
//
//	go test -run '^$' -bench ReconcileMemory -benchtime 1x ./bench
func BenchmarkReconcileMemory(b *testing.B) {
	const n = 6500
	flotilla := buildFlotilla(b)
	dir := writeConfigMaps(b, n, "")
	for b.Loop() {
		c, err := localcluster.Start(b.Context(), localcluster.Options{Name: "bench-mem"})
		if err != nil {
			b.Fatal(err)
		}
		first := runReconcile(b, flotilla, c, dir, "spoke", "--create-namespace")
		again := runReconcile(b, flotilla, c, dir, "spoke")
		b.ReportMetric(float64(first.MaxRSS)/(1<<20), "first-peak-MiB")
		b.ReportMetric(float64(again.MaxRSS)/(1<<20), "unchanged-peak-MiB")
		b.ReportMetric(first.Result.Seconds, "first-s")
		b.ReportMetric(again.Result.Seconds, "unchanged-s")
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

type reconcileRun struct {
	Result struct {
		Requests struct{ Total, Reads, DryRuns, Writes int64 }
		Seconds  float64 `json:"durationSeconds"`
	}
	MaxRSS int64 // bytes
}

func runReconcile(b *testing.B, flotilla string, c *localcluster.Cluster, dir, ns string, extra ...string) reconcileRun {
	b.Helper()
	args := append([]string{"reconcile", dir, "--kubeconfig", c.KubeconfigPath(), "--name", ns, "-n", ns, "-o", "json"}, extra...)
	cmd := exec.CommandContext(b.Context(), flotilla, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("flotilla %v: %v\n%s", args, err, errOut.String())
	}
	var run reconcileRun
	if err := json.Unmarshal(out.Bytes(), &run.Result); err != nil {
		b.Fatalf("flotilla output: %v", err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.MaxRSS = ru.Maxrss * 1024
	}
	return run
}

func bareApply(b *testing.B, cs *kubernetes.Clientset, n int, ns string) {
	g, ctx := errgroup.WithContext(b.Context())
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			cm := corev1ac.ConfigMap(fmt.Sprintf("cm-%04d", i), ns).WithData(configMapData(i))
			_, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "bare", Force: true})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func fluxApply(b *testing.B, c *localcluster.Cluster, n int, ns string) {
	kc, err := client.New(unlimited(c), client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := ssa.NewResourceManager(kc, nil, ssa.Owner{Field: "flux", Group: "bench.flotilla.dev"})
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(ns)
		u.SetName(fmt.Sprintf("cm-%04d", i))
		data := map[string]any{}
		for k, v := range configMapData(i) {
			data[k] = v
		}
		u.Object["data"] = data
		objs[i] = u
	}
	if _, err := m.ApplyAllStaged(b.Context(), objs, ssa.DefaultApplyOptions()); err != nil {
		b.Fatal(err)
	}
}

func configMapData(i int) map[string]string {
	return map[string]string{"index": fmt.Sprint(i), "payload": "some small configuration value"}
}

// writeConfigMaps writes n ConfigMaps as one multi-document file per 100 objects.
func writeConfigMaps(b *testing.B, n int, ns string) string {
	b.Helper()
	dir := b.TempDir()
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n", i)
		if ns != "" {
			fmt.Fprintf(&buf, "  namespace: %s\n", ns)
		}
		fmt.Fprintf(&buf, "data:\n  index: %q\n  payload: some small configuration value\n", fmt.Sprint(i))
		if (i+1)%100 == 0 || i == n-1 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%03d.yaml", i/100)), buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
		}
	}
	return dir
}

func buildFlotilla(b *testing.B) string { return buildCmd(b, "flotilla") }

func unlimited(c *localcluster.Cluster) *rest.Config {
	cfg := c.RESTConfig()
	cfg.QPS = -1
	return cfg
}

func timeIt(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
