package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/agent"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestAdoptFromArgoCDAndHelm: objects Argo CD (server-side apply as argocd-controller, with
// its tracking label and annotation), kubectl (client-side apply, with the last-applied
// annotation) and Helm (its marks and its release Secret) put on a cluster are taken over by
// a Release with adopt. While the old tools wrote within the release's interval (by the
// agent's clock) the release is refused and nothing is written; once the interval has passed
// they are adopted: same UIDs, the pod template untouched, the old managers and their marks
// gone, Helm's Secret deleted, one audit record; and the old tool's next apply conflicts.
func TestAdoptFromArgoCDAndHelm(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	release := func(env string) string {
		return fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: shop}
spec:
  source: apps
  path: apps/shop
  targets: [{selector: {matchLabels: {env: %s}}}]
  namespace: shop
  interval: 1h
  adopt:
    fromManagers: [argocd-controller, kubectl-client-side-apply, helm]
    helmRelease: legacy
`, repoURL, env)
	}
	rp := newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml": release("staging"), // nothing assigned yet
		"apps/shop/shop.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: chart-config}
data: {size: "3"}
`,
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}})
	// The agent's clock, which judges whether the old tools are still active.
	clk := &offsetClock{}
	f.stopAgent("edge")
	startAgentWithClock(f, "edge", clk)

	cluster := f.clusters["edge"]
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Argo CD's sync: server-side apply as argocd-controller.
	argo := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
	  "labels":{"app":"web","argocd.argoproj.io/instance":"shop"},"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"}},
	  "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
	  "spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`
	if _, err := cs.AppsV1().Deployments("shop").Patch(ctx, "web", types.ApplyPatchType, []byte(argo), metav1.PatchOptions{FieldManager: "argocd-controller"}); err != nil {
		t.Fatal(err)
	}
	// kubectl apply (client-side).
	if _, err := cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Annotations: map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","data":{"mode":"fast","old":"yes"},"kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop"}}`}},
		Data: map[string]string{"mode": "fast", "old": "yes"},
	}, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	// helm install legacy: its marks on the object and its release Secret.
	if _, err := cs.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "chart-config", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "legacy", "meta.helm.sh/release-namespace": "shop"}},
		Data: map[string]string{"size": "3"},
	}, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("shop").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.legacy.v1", Labels: map[string]string{"owner": "helm", "name": "legacy", "status": "deployed", "version": "1"}},
		Type:       "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("H4sI")},
	}, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	depBefore, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmBefore, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Assigned while the old tools wrote a moment ago: refused, nothing written.
	rp.commit("assign shop to prod", map[string]string{"fleet/fleet.yaml": release("prod")})
	st := f.waitStatus("adoption refused", 2*time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Release == "shop" && a.Phase == "Failed" && strings.Contains(a.Error, "adoption refused") {
				return true
			}
		}
		return false
	})
	for _, a := range st.Assignments {
		if a.Release != "shop" {
			continue
		}
		for _, want := range []string{
			`deployment.apps/web in namespace "shop" was written by field manager "argocd-controller" at `,
			"stop Argo CD for this application first (e.g. disable auto-sync / suspend the Kustomization), then adoption proceeds at the next reconcile",
			`configmap/settings in namespace "shop" was written by field manager "kubectl-client-side-apply"`,
		} {
			if !strings.Contains(a.Error, want) {
				t.Errorf("refusal does not say %q:\n%s", want, a.Error)
			}
		}
	}
	if d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{}); err != nil || d.ResourceVersion != depBefore.ResourceVersion {
		t.Fatalf("refused adoption wrote the Deployment (resourceVersion %s, was %s): %v", d.ResourceVersion, depBefore.ResourceVersion, err)
	}

	// The old tools stopped an interval ago (by the agent's clock): adopted at the next try.
	clk.advance(61 * time.Minute)
	f.waitStatus("adopted", 2*time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Release == "shop" && a.Phase == "Ready" {
				return true
			}
		}
		return false
	})
	dep, err := cs.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.UID != depBefore.UID {
		t.Errorf("Deployment re-created: uid %s, was %s", dep.UID, depBefore.UID)
	}
	if !reflect.DeepEqual(dep.Spec.Template, depBefore.Spec.Template) {
		t.Errorf("pod template changed (a restart):\n%+v\nwas\n%+v", dep.Spec.Template, depBefore.Spec.Template)
	}
	if dep.Labels["argocd.argoproj.io/instance"] != "" || dep.Annotations["argocd.argoproj.io/tracking-id"] != "" || dep.Labels["app"] != "web" {
		t.Errorf("Deployment labels %v annotations %v: want app=web and no Argo CD marks", dep.Labels, dep.Annotations)
	}
	cm, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.UID != cmBefore.UID || !reflect.DeepEqual(cm.Data, map[string]string{"mode": "fast"}) || cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Errorf("ConfigMap uid %s (was %s) data %v annotations %v: want the same object, mode alone, no last-applied", cm.UID, cmBefore.UID, cm.Data, cm.Annotations)
	}
	chart, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, "chart-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(chart.Labels) != 0 || len(chart.Annotations) != 0 {
		t.Errorf("Helm's marks stay on chart-config: labels %v annotations %v", chart.Labels, chart.Annotations)
	}
	if _, err := cs.CoreV1().Secrets("shop").Get(ctx, "sh.helm.release.v1.legacy.v1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Helm's release Secret not deleted: %v", err)
	}
	for name, mfs := range map[string][]metav1.ManagedFieldsEntry{"deployment/web": dep.ManagedFields, "configmap/settings": cm.ManagedFields, "configmap/chart-config": chart.ManagedFields} {
		for _, mf := range mfs {
			if mf.Manager == "argocd-controller" || mf.Manager == "kubectl-client-side-apply" || mf.Manager == "helm" {
				t.Errorf("%s still has manager %s (%s)", name, mf.Manager, mf.Operation)
			}
		}
	}

	// One audit record of the adoption, naming the objects and the managers.
	var recs []hubclient.AuditRecord
	eventually.Within(t, time.Minute, eventually.True("adoption audited", func() bool {
		recs, err = f.client.Audit(ctx, hubclient.AuditFilter{Release: "shop", Action: "release.adopted"})
		return err == nil && len(recs) > 0
	}))
	if len(recs) != 1 {
		t.Errorf("%d adoption records, want 1: %+v", len(recs), recs)
	}
	detail := fmt.Sprint(recs[0].Detail)
	for _, want := range []string{"deployment.apps/web", "configmap/settings", "configmap/chart-config", "argocd-controller", "kubectl-client-side-apply", "legacy"} {
		if !strings.Contains(detail, want) {
			t.Errorf("adoption record does not name %s: %s", want, detail)
		}
	}

	// Argo CD, were it still syncing, now meets flotilla's ownership instead of silently
	// taking the object back.
	_, err = cs.AppsV1().Deployments("shop").Patch(ctx, "web", types.ApplyPatchType, []byte(strings.Replace(argo, `"replicas":2`, `"replicas":5`, 1)), metav1.PatchOptions{FieldManager: "argocd-controller"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "flotilla"`) {
		t.Errorf("apply by argocd-controller after adoption: %v, want a conflict with flotilla", err)
	}
}

// startAgentWithClock starts the agent of a cluster, already joined, on clock.
func startAgentWithClock(f *fleet, name string, clk *offsetClock) {
	f.t.Helper()
	c := f.clusters[name]
	a, err := agent.New(f.t.Context(), agent.Options{
		HubURL: f.hub.AgentURL(), RESTConfig: c.RESTConfig(),
		StateDir: filepath.Join(f.dir, "agents", name), Logger: f.logger("agent-" + name),
		HeartbeatInterval: time.Second, ReportInterval: 200 * time.Millisecond, MaxBackoff: time.Second, Clock: clk,
	})
	if err != nil {
		f.t.Fatalf("agent %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			f.t.Errorf("agent: %v", err)
		}
		a.Close()
	}()
	f.mu.Lock()
	f.agents[name] = func() { cancel(); <-done }
	f.mu.Unlock()
}
