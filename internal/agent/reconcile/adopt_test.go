package reconcile

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

// oldTool writes objects the way another tool does: server-side apply under its field
// manager, or a create (an Update in managedFields) as kubectl's client-side apply and Helm 3
// do.
type oldTool struct {
	t   *testing.T
	dyn dynamic.Interface
}

func newOldTool(t *testing.T) *oldTool {
	t.Helper()
	return &oldTool{t: t, dyn: dynamic.NewForConfigOrDie(restConfig())}
}

func (o *oldTool) resource(u *unstructured.Unstructured) dynamic.ResourceInterface {
	gvk := u.GroupVersionKind()
	plural := map[string]string{"Deployment": "deployments", "ConfigMap": "configmaps", "Service": "services", "Secret": "secrets"}[gvk.Kind]
	return o.dyn.Resource(schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: plural}).Namespace(u.GetNamespace())
}

// apply server-side applies doc as manager; force takes contested fields.
func (o *oldTool) apply(manager string, force bool, doc string) (*unstructured.Unstructured, error) {
	o.t.Helper()
	u := clustertestObject(o.t, doc)
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		o.t.Fatal(err)
	}
	return o.resource(u).Patch(o.t.Context(), u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: &force})
}

// create creates doc as manager (an Update entry in managedFields).
func (o *oldTool) create(manager string, doc string) *unstructured.Unstructured {
	o.t.Helper()
	u := clustertestObject(o.t, doc)
	out, err := o.resource(u).Create(o.t.Context(), u, metav1.CreateOptions{FieldManager: manager})
	if err != nil {
		o.t.Fatal(err)
	}
	return out
}

func (o *oldTool) get(kind, ns, name string) *unstructured.Unstructured {
	o.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(map[string]string{"Deployment": "apps/v1"}[kind])
	if u.GetAPIVersion() == "" {
		u.SetAPIVersion("v1")
	}
	u.SetKind(kind)
	u.SetNamespace(ns)
	out, err := o.resource(u).Get(o.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		o.t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	return out
}

func clustertestObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	objs := parse(t, "", doc)
	if len(objs) != 1 {
		t.Fatalf("want one object, got %d", len(objs))
	}
	return objs[0]
}

func managersOf(u *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range u.GetManagedFields() {
		out = append(out, mf.Manager+"/"+string(mf.Operation))
	}
	return out
}

// Live objects of three tools and Helm; the Git side declares the same content without the
// tools' marks.
const (
	argoDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {{ns}}
  labels: {app: web, argocd.argoproj.io/instance: guestbook}
  annotations: {argocd.argoproj.io/tracking-id: "guestbook:apps/Deployment:{{ns}}/web"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]
`
	gitDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: {{ns}}, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]
`
	fluxDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: {{ns}}
  labels: {app: worker, kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}
spec:
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}, annotations: {kubectl.kubernetes.io/restartedAt: "2026-11-30T10:00:00Z"}}
    spec:
      containers: [{name: worker, image: "busybox:1.36", args: [sleep, "3600"]}]
`
	gitWorker = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: {{ns}}, labels: {app: worker}}
spec:
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}, annotations: {kubectl.kubernetes.io/restartedAt: "2026-11-30T10:00:00Z"}}
    spec:
      containers: [{name: worker, image: "busybox:1.36", args: [sleep, "3600"]}]
`
	fluxConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {{ns}}
  labels: {team: payments, kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}
data: {mode: fast, retired: "yes"}
`
	gitConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: {{ns}}, labels: {team: payments}}
data: {mode: fast}
`
	gitService = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: {{ns}}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
`
	helmConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: chart-config
  namespace: {{ns}}
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: legacy, meta.helm.sh/release-namespace: {{ns}}}
data: {size: "3"}
`
	gitHelmConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: chart-config, namespace: {{ns}}}
data: {size: "3"}
`
	helmStorage = `
apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.legacy.v1
  namespace: {{ns}}
  labels: {owner: helm, name: legacy, status: deployed, version: "1"}
data: {release: SDRzSUFBQUFBQUFBLw==}
`
)

// oldToolObjects creates the live objects and returns them as read back.
func oldToolObjects(t *testing.T, old *oldTool, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	if _, err := clientset(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sub := func(doc string) string { return strings.ReplaceAll(doc, "{{ns}}", ns) }
	if _, err := old.apply("argocd-controller", false, sub(argoDeployment)); err != nil {
		t.Fatal(err)
	}
	if _, err := old.apply("kustomize-controller", false, sub(fluxDeployment)); err != nil {
		t.Fatal(err)
	}
	if _, err := old.apply("kustomize-controller", false, sub(fluxConfigMap)); err != nil {
		t.Fatal(err)
	}
	// Someone relabelled it by hand: a tracking label held by a manager not adopted goes too.
	if _, err := clientset(t).CoreV1().ConfigMaps(ns).Patch(t.Context(), "settings", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"kustomize.toolkit.fluxcd.io/namespace":"flux-apps"}}}`), metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}
	// kubectl apply (client-side): a create that carries the last-applied annotation.
	svc := clustertestObject(t, sub(gitService))
	lastApplied, _ := svc.MarshalJSON()
	old.create("kubectl-client-side-apply", sub(fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: {{ns}}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '%s'}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
`, lastApplied)))
	old.create("helm", sub(helmConfigMap))
	old.create("helm", sub(helmStorage))
	return map[string]*unstructured.Unstructured{
		"Deployment/web":                      old.get("Deployment", ns, "web"),
		"Deployment/worker":                   old.get("Deployment", ns, "worker"),
		"ConfigMap/settings":                  old.get("ConfigMap", ns, "settings"),
		"Service/web":                         old.get("Service", ns, "web"),
		"ConfigMap/chart-config":              old.get("ConfigMap", ns, "chart-config"),
		"Secret/sh.helm.release.v1.legacy.v1": old.get("Secret", ns, "sh.helm.release.v1.legacy.v1"),
	}
}

var adoptedManagers = []string{"argocd-controller", "kustomize-controller", "kubectl-client-side-apply", "helm"}

func TestAdoptTakesOverWithoutRecreating(t *testing.T) {
	t.Parallel()
	for _, helmRelease := range []string{"", "legacy"} {
		t.Run("helmRelease="+helmRelease, func(t *testing.T) {
			ns := uniqueName("adopt")
			old := newOldTool(t)
			before := oldToolObjects(t, old, ns)
			r := newTestReconciler(t)
			objs := parse(t, ns, gitDeployment+"---"+gitWorker+"---"+gitConfigMap+"---"+gitService+"---"+gitHelmConfigMap)
			opts := Options{Name: ns, Namespace: ns, Adopt: &Adopt{
				FromManagers: adoptedManagers, HelmRelease: helmRelease, Interval: time.Minute,
				Now: time.Now().Add(time.Hour), // the old tools last wrote an hour ago
			}}
			res := mustReconcile(t, r, objs, opts)
			want := map[string]Action{"deployment.apps/web": Adopted, "deployment.apps/worker": Adopted, "configmap/settings": Adopted, "service/web": Adopted, "configmap/chart-config": Adopted}
			if got := actions(res); !reflect.DeepEqual(got, want) {
				t.Fatalf("actions = %v, want %v\n%s", got, want, res)
			}
			if o := res.Find("Deployment", ns, "web"); !reflect.DeepEqual(o.AdoptedFrom, []string{"argocd-controller"}) {
				t.Errorf("deployment adopted from %v, want [argocd-controller]", o.AdoptedFrom)
			}

			after := map[string]*unstructured.Unstructured{}
			for key := range before {
				kind, name, _ := strings.Cut(key, "/")
				if kind == "Secret" {
					continue
				}
				after[key] = old.get(kind, ns, name)
				if a, b := after[key].GetUID(), before[key].GetUID(); a != b {
					t.Errorf("%s re-created: uid %s, was %s", key, a, b)
				}
				for _, m := range managersOf(after[key]) {
					for _, gone := range adoptedManagers {
						if strings.HasPrefix(m, gone+"/") {
							t.Errorf("%s still has manager %s: %v", key, m, managersOf(after[key]))
						}
					}
				}
				if !ownsByApply(after[key]) {
					t.Errorf("%s: flotilla holds no Apply entry: %v", key, managersOf(after[key]))
				}
			}
			// No restart: the pod template and the generation are what they were.
			dep, depBefore := after["Deployment/web"], before["Deployment/web"]
			// Removing an annotation of a Deployment (Argo CD's tracking-id) bumps its
			// generation (the API server copies a Deployment's annotations to its ReplicaSets);
			// it starts no rollout as long as the pod template stays as it was.
			if dep.GetGeneration() != depBefore.GetGeneration()+1 {
				t.Errorf("deployment generation %d, was %d: want one step, for the removed annotation", dep.GetGeneration(), depBefore.GetGeneration())
			}
			worker, workerBefore := after["Deployment/worker"], before["Deployment/worker"]
			if worker.GetGeneration() != workerBefore.GetGeneration() {
				t.Errorf("worker generation %d, was %d: its spec changed", worker.GetGeneration(), workerBefore.GetGeneration())
			}
			if l := worker.GetLabels(); !reflect.DeepEqual(l, map[string]string{"app": "worker"}) {
				t.Errorf("worker labels %v, want app=worker alone", l)
			}
			wt, _, _ := unstructured.NestedMap(worker.Object, "spec", "template")
			wtBefore, _, _ := unstructured.NestedMap(workerBefore.Object, "spec", "template")
			if !reflect.DeepEqual(wt, wtBefore) {
				t.Errorf("worker pod template changed:\n%v\nwas\n%v", wt, wtBefore)
			}
			tmpl, _, _ := unstructured.NestedMap(dep.Object, "spec", "template")
			tmplBefore, _, _ := unstructured.NestedMap(depBefore.Object, "spec", "template")
			if !reflect.DeepEqual(tmpl, tmplBefore) {
				t.Errorf("pod template changed:\n%v\nwas\n%v", tmpl, tmplBefore)
			}
			// The old tools' marks are gone, what Git declares stays, what only the old tool
			// declared is gone.
			if l := dep.GetLabels(); l["argocd.argoproj.io/instance"] != "" || l["app"] != "web" {
				t.Errorf("deployment labels %v: want app=web and no argocd.argoproj.io/instance", l)
			}
			if a := dep.GetAnnotations(); a["argocd.argoproj.io/tracking-id"] != "" {
				t.Errorf("deployment annotations %v still track Argo CD", a)
			}
			cm := after["ConfigMap/settings"]
			if l := cm.GetLabels(); !reflect.DeepEqual(l, map[string]string{"team": "payments"}) {
				t.Errorf("configmap labels %v, want only team=payments", l)
			}
			if d, _, _ := unstructured.NestedStringMap(cm.Object, "data"); !reflect.DeepEqual(d, map[string]string{"mode": "fast"}) {
				t.Errorf("configmap data %v, want mode=fast alone (retired was only the old tool's)", d)
			}
			if a := after["Service/web"].GetAnnotations(); a["kubectl.kubernetes.io/last-applied-configuration"] != "" {
				t.Errorf("service keeps kubectl's last-applied annotation: %v", a)
			}
			chart := after["ConfigMap/chart-config"]
			_, err := clientset(t).CoreV1().Secrets(ns).Get(t.Context(), "sh.helm.release.v1.legacy.v1", metav1.GetOptions{})
			if helmRelease == "" {
				if chart.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || chart.GetAnnotations()["meta.helm.sh/release-name"] != "legacy" {
					t.Errorf("without helmRelease Helm's marks must stay: labels %v annotations %v", chart.GetLabels(), chart.GetAnnotations())
				}
				if err != nil {
					t.Errorf("without helmRelease the Helm storage Secret must stay: %v", err)
				}
				if len(res.HelmStorageDeleted) != 0 {
					t.Errorf("HelmStorageDeleted = %v without helmRelease", res.HelmStorageDeleted)
				}
			} else {
				if len(chart.GetLabels()) != 0 || len(chart.GetAnnotations()) != 0 {
					t.Errorf("with helmRelease Helm's marks must go: labels %v annotations %v", chart.GetLabels(), chart.GetAnnotations())
				}
				if !apierrors.IsNotFound(err) {
					t.Errorf("with helmRelease the Helm storage Secret must be deleted, got %v", err)
				}
				if !reflect.DeepEqual(res.HelmStorageDeleted, []string{"sh.helm.release.v1.legacy.v1"}) {
					t.Errorf("HelmStorageDeleted = %v", res.HelmStorageDeleted)
				}
			}

			// Adopted once: the next reconcile has nothing left to take.
			res = mustReconcile(t, r, objs, opts)
			if n := res.Count(Adopted); n != 0 {
				t.Errorf("second reconcile adopted %d objects again:\n%s", n, res)
			}

			// The old tool, still running somewhere, now meets flotilla's ownership.
			_, err = old.apply("argocd-controller", false, strings.ReplaceAll(strings.ReplaceAll(argoDeployment, "replicas: 2", "replicas: 5"), "{{ns}}", ns))
			if !apierrors.IsConflict(err) {
				t.Fatalf("apply by argocd-controller after adoption: %v, want a conflict", err)
			}
			if !strings.Contains(err.Error(), `conflict with "flotilla"`) || !strings.Contains(err.Error(), ".spec.replicas") {
				t.Errorf("conflict does not name flotilla and .spec.replicas: %v", err)
			}
		})
	}
}

func TestAdoptRefusedWhileOldToolActive(t *testing.T) {
	t.Parallel()
	ns := uniqueName("adopt-active")
	old := newOldTool(t)
	before := oldToolObjects(t, old, ns)
	written := before["Deployment/web"].GetManagedFields()[0].Time.Time
	r := newTestReconciler(t)
	objs := parse(t, ns, gitDeployment+"---"+gitConfigMap)
	cases := []struct {
		name    string
		now     time.Time
		refused bool
	}{
		{"written 30s before, interval 1m", written.Add(30 * time.Second), true},
		{"written 59s before, interval 1m", written.Add(59 * time.Second), true},
		{"written 61s before, interval 1m", written.Add(61 * time.Second), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Name: ns, Namespace: ns, DryRun: true,
				Adopt: &Adopt{FromManagers: []string{"argocd-controller", "kustomize-controller"}, Interval: time.Minute, Now: tc.now}}
			res, err := r.Reconcile(t.Context(), objs, opts)
			var refused *AdoptRefusedError
			if got := errors.As(err, &refused); got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if !tc.refused {
				if n := res.Count(Adopted); n != 2 {
					t.Errorf("dry run adopts %d objects, want 2:\n%s", n, res)
				}
				return
			}
			msg := err.Error()
			for _, want := range []string{
				fmt.Sprintf(`deployment.apps/web in namespace %q was written by field manager "argocd-controller" at %s`, ns, written.UTC().Format(time.RFC3339)),
				"stop Argo CD for this application first (e.g. disable auto-sync / suspend the Kustomization), then adoption proceeds at the next reconcile",
				fmt.Sprintf(`configmap/settings in namespace %q was written by field manager "kustomize-controller"`, ns),
				"stop Flux (kustomize-controller) for this application first",
				"within the release's interval of 1m0s",
				"nothing applied",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal does not say %q:\n%s", want, msg)
				}
			}
		})
	}
	// Refused for real (not a dry run): nothing was written.
	opts := Options{Name: ns, Namespace: ns, Adopt: &Adopt{FromManagers: []string{"argocd-controller"}, Interval: time.Minute, Now: written.Add(time.Second)}}
	if _, err := r.Reconcile(t.Context(), objs, opts); err == nil {
		t.Fatal("adoption while the old tool is active was not refused")
	}
	for key, b := range before {
		kind, name, _ := strings.Cut(key, "/")
		if a := old.get(kind, ns, name); a.GetResourceVersion() != b.GetResourceVersion() {
			t.Errorf("%s written by a refused adoption: resourceVersion %s, was %s", key, a.GetResourceVersion(), b.GetResourceVersion())
		}
	}
}

func TestAdoptRulesRefused(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	cases := []struct {
		adopt *Adopt
		want  string
	}{
		{&Adopt{}, "adopt: fromManagers is empty"},
		{&Adopt{FromManagers: []string{"flotilla"}}, `adopt: fromManagers entry 1 is "flotilla", flotilla's own field manager`},
		{&Adopt{FromManagers: []string{strings.Repeat("m", 129)}}, "adopt: fromManagers entry 1 is 129 bytes long: a field manager's name has 1 to 128"},
		{&Adopt{FromManagers: make([]string, 33)}, "adopt: fromManagers has 33 entries, more than 32"},
		{&Adopt{FromManagers: []string{"helm"}, HelmRelease: strings.Repeat("h", 54)}, "is 54 bytes long: a Helm release name has at most 53"},
		{&Adopt{FromManagers: []string{"helm"}, HelmRelease: "x", HelmReleaseNamespace: strings.Repeat("n", 64)}, "adopt: helmReleaseNamespace is 64 bytes long: a namespace's name has at most 63"},
	}
	for _, tc := range cases {
		_, err := r.Reconcile(t.Context(), nil, Options{Name: "refused", Adopt: tc.adopt})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") {
			t.Errorf("adopt %+v: error %v, want %q and nothing applied", tc.adopt, err, tc.want)
		}
	}
}

// The Helm Secrets adoption deletes are held to the release's bounds.
func TestAdoptHelmStorageBounds(t *testing.T) {
	t.Parallel()
	teamA := &project.Rules{Name: "team-a", Namespaces: []string{"team-a"}}
	noSecrets := &project.Rules{Name: "team-a", Namespaces: []string{"team-a"}, Deny: []v1alpha1.GroupKind{{Kind: "Secret"}}}
	cases := []struct {
		name      string
		rules     *project.Rules
		namespace string
		want      string
	}{
		{"other namespace", teamA, "kube-system", `adopt: the storage Secrets of Helm release "legacy" in namespace "kube-system": namespace kube-system is not one of project "team-a"'s namespaces (team-a)`},
		{"inventory namespace", nil, "flotilla-system", `namespace flotilla-system holds the agent's inventories`},
		{"secrets denied", noSecrets, "", `kind Secret is not allowed by project "team-a"`},
		{"allowed", teamA, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAdoptBounds(Options{Namespace: "team-a", Project: tc.rules,
				Adopt: &Adopt{FromManagers: []string{"helm"}, HelmRelease: "legacy", HelmReleaseNamespace: tc.namespace}}, "flotilla-system")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !IsOutOfBounds(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") {
				t.Errorf("error %v, want a bounds error saying %q", err, tc.want)
			}
		})
	}
}

// Without adopt a conflict names the tool that holds the field.
func TestConflictNamesTheTool(t *testing.T) {
	t.Parallel()
	cases := []struct {
		manager, metadata, want string
	}{
		{"argocd-controller", `labels: {argocd.argoproj.io/instance: guestbook}`, `.data.mode owned by Argo CD application guestbook (field manager "argocd-controller")`},
		{"argocd-controller", `annotations: {argocd.argoproj.io/tracking-id: "shop:/ConfigMap:x/settings"}`, `.data.mode owned by Argo CD application shop (field manager "argocd-controller")`},
		{"kustomize-controller", `labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}`, `.data.mode owned by Flux Kustomization flux-system/apps (field manager "kustomize-controller")`},
		{"helm-controller", `labels: {helm.toolkit.fluxcd.io/name: podinfo, helm.toolkit.fluxcd.io/namespace: apps}`, `.data.mode owned by Flux HelmRelease apps/podinfo (field manager "helm-controller")`},
		{"helm", `annotations: {meta.helm.sh/release-name: legacy}`, `.data.mode owned by Helm release legacy (field manager "helm")`},
		{"team-x", `labels: {owner: x}`, `.data.mode owned by field manager "team-x"`},
	}
	r := newTestReconciler(t)
	old := newOldTool(t)
	for _, tc := range cases {
		t.Run(tc.manager, func(t *testing.T) {
			ns := uniqueName("owner")
			if _, err := clientset(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := old.apply(tc.manager, false, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\n  %s\ndata: {mode: slow}\n", ns, tc.metadata)); err != nil {
				t.Fatal(err)
			}
			res, _ := r.Reconcile(t.Context(), parse(t, ns, gitConfigMap), Options{Name: ns, Namespace: ns})
			o := res.Find("ConfigMap", ns, "settings")
			if o == nil || o.Action != Conflict {
				t.Fatalf("want a conflict:\n%s", res)
			}
			if want := fmt.Sprintf("configmap/settings in namespace %q: %s", ns, tc.want); o.ConflictText() != want {
				t.Errorf("conflict text\n%s\nwant\n%s", o.ConflictText(), want)
			}
		})
	}
}
