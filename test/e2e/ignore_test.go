package e2e

import (
	"fmt"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestIgnoreRulesThroughTheFleet: a Release's ignore rule and the scale subresource reach the
// agent. An HPA-style writer scales the Deployment through the scale subresource as
// kube-controller-manager, and another client edits an ignored ConfigMap key: the agent keeps
// both and never writes the Deployment again, over five drift checks (each proven by a drift
// of a field that is not ignored, healed, whose manager the hub's drift view names).
func TestIgnoreRulesThroughTheFleet(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	repoURL := "file://" + repoDir
	newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: web}
spec:
  source: apps
  path: apps/web
  targets: [{selector: {}}]
  namespace: web
  createNamespace: true
  interval: 1s
  ignore:
    - target: {kind: ConfigMap, name: settings}
      paths: ["/data/mode"]
`, repoURL),
		"apps/web/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
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
data: {mode: production, level: info}
`,
	})
	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}})
	f.waitStatus("first convergence", 2*time.Minute, converged("", map[string][]string{"edge": {"web"}}))
	cluster := f.clusters["edge"]
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	deps := cs.AppsV1().Deployments("web")

	sc, err := deps.GetScale(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 5
	if _, err := deps.UpdateScale(t.Context(), "web", &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: sc.Spec},
		metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Kubectl(t.Context(), nil, "-n", "web", "patch", "configmap/settings", "--type=merge", `-p={"data":{"mode":"debug"}}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	d, err := deps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := d.ResourceVersion

	for round := range 5 {
		if out, err := cluster.Kubectl(t.Context(), nil, "-n", "web", "patch", "configmap/settings", "--type=merge", `-p={"data":{"level":"debug"}}`); err != nil {
			t.Fatalf("kubectl patch: %v\n%s", err, out)
		}
		eventually.Within(t, time.Minute, eventually.True(fmt.Sprintf("round %d: .data.level healed", round+1), func() bool {
			v, ok := configMapData(t, cluster, "web", "settings", "level")
			return ok && v == "info"
		}))
		if v, _ := configMapData(t, cluster, "web", "settings", "mode"); v != "debug" {
			t.Fatalf("round %d: ignored .data.mode = %q, want the edited debug kept", round+1, v)
		}
		d, err := deps.Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 5 || d.ResourceVersion != rv {
			t.Fatalf("round %d: replicas %d, resourceVersion %s (was %s): the agent took the HPA's count back or wrote the Deployment",
				round+1, *d.Spec.Replicas, d.ResourceVersion, rv)
		}
	}

	// The healed drift is in the hub's drift view with the manager that wrote it.
	var seen []hubclient.DriftedObject
	eventually.Within(t, time.Minute, eventually.True("drift view names kubectl-patch", func() bool {
		v, err := f.client.Drift(t.Context(), hubclient.DriftFilter{Cluster: "edge", Release: "web"})
		if err != nil {
			return false
		}
		seen = v.Objects
		for _, o := range v.Objects {
			for _, fd := range o.Fields {
				if o.Object == "configmap/settings" && fd.Path == ".data.level" && fd.Manager == "kubectl-patch" && o.Kind == "ConfigMap" {
					return true
				}
			}
		}
		return false
	}))
	for _, o := range seen {
		for _, fd := range o.Fields {
			if fd.Path == ".data.mode" || fd.Path == ".spec.replicas" {
				t.Errorf("drift view reports %s %s: a field left alone is never drift", o.Object, fd.Path)
			}
		}
	}
}
