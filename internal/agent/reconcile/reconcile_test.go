package reconcile

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const twoConfigMaps = `
apiVersion: v1
kind: ConfigMap
metadata: {name: alpha}
data: {colour: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: beta}
data: {size: small}
`

func TestCreateUpdateUnchanged(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("cuu")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true}
	cs := clientset(t)

	t.Run("creates objects and the namespace", func(t *testing.T) {
		res := mustReconcile(t, r, parse(t, ns, twoConfigMaps), opts)
		want := map[string]Action{"namespace/" + ns: Created, "configmap/alpha": Created, "configmap/beta": Created}
		if d := cmp.Diff(want, actions(res)); d != "" {
			t.Errorf("actions (-want +got):\n%s", d)
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["colour"] != "blue" {
			t.Errorf("alpha data = %v", cm.Data)
		}
		if !ownsByApplyTyped(cm.ManagedFields) {
			t.Errorf("alpha not owned by field manager %q through Apply: %+v", FieldManager, cm.ManagedFields)
		}
	})

	t.Run("unchanged input sends no write and no dry-run", func(t *testing.T) {
		res := mustReconcile(t, r, parse(t, ns, twoConfigMaps), opts)
		for _, o := range res.Objects {
			if o.Action != Unchanged {
				t.Errorf("%s: %s, want unchanged", o.ObjectRef, o.Action)
			}
		}
		if res.Requests.Writes != 0 || res.Requests.DryRuns != 0 {
			t.Errorf("unchanged reconcile sent %d writes and %d dry-runs, want none (%+v)", res.Requests.Writes, res.Requests.DryRuns, res.Requests)
		}
	})

	t.Run("updates a changed object and leaves the other alone", func(t *testing.T) {
		changed := strings.Replace(twoConfigMaps, "colour: blue", "colour: green", 1)
		res := mustReconcile(t, r, parse(t, ns, changed), opts)
		want := map[string]Action{"namespace/" + ns: Unchanged, "configmap/alpha": Configured, "configmap/beta": Unchanged}
		if d := cmp.Diff(want, actions(res)); d != "" {
			t.Errorf("actions (-want +got):\n%s", d)
		}
		if res.Requests.Writes != 2 {
			t.Errorf("writes = %d, want 2 (the changed object and the inventory)", res.Requests.Writes)
		}
		cm, _ := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "alpha", metav1.GetOptions{})
		if cm.Data["colour"] != "green" {
			t.Errorf("alpha data = %v, want colour=green", cm.Data)
		}
	})

	t.Run("a field removed from the desired state is removed live", func(t *testing.T) {
		withExtra := strings.Replace(twoConfigMaps, "size: small", "size: small, shape: round", 1)
		mustReconcile(t, r, parse(t, ns, withExtra), opts)
		res := mustReconcile(t, r, parse(t, ns, twoConfigMaps), opts)
		if got := actions(res)["configmap/beta"]; got != Configured {
			t.Errorf("beta: %s, want configured", got)
		}
		cm, _ := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "beta", metav1.GetOptions{})
		if _, ok := cm.Data["shape"]; ok {
			t.Errorf("beta still has shape: %v", cm.Data)
		}
	})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("prune")
	cs := clientset(t)
	three := twoConfigMaps + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: keeper
  annotations: {flotilla.dev/prune: disabled}
data: {stay: "yes"}
`
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Prune: true}
	mustReconcile(t, r, parse(t, ns, three), opts)
	// An object nobody applied: never in the inventory, so never pruned.
	bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: ns}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), bystander, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	onlyAlpha := parse(t, ns, twoConfigMaps)[:1]
	res := mustReconcile(t, r, onlyAlpha, opts)
	want := map[string]Action{"namespace/" + ns: Unchanged, "configmap/alpha": Unchanged, "configmap/beta": Pruned, "configmap/keeper": PruneSkipped}
	if d := cmp.Diff(want, actions(res)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	for name, wantExists := range map[string]bool{"alpha": true, "beta": false, "keeper": true, "bystander": true} {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if exists := err == nil; exists != wantExists {
			t.Errorf("configmap %s exists = %v, want %v (err %v)", name, exists, wantExists, err)
		}
	}
	// The kept object left the inventory: it is not pruned later either.
	res = mustReconcile(t, r, onlyAlpha, opts)
	if a, ok := actions(res)["configmap/keeper"]; ok {
		t.Errorf("keeper reported again as %s after it left the inventory", a)
	}

	t.Run("without prune, objects that left the set stay", func(t *testing.T) {
		ns := uniqueName("noprune")
		opts := Options{Name: ns, Namespace: ns, CreateNamespace: true}
		mustReconcile(t, r, parse(t, ns, twoConfigMaps), opts)
		res := mustReconcile(t, r, parse(t, ns, twoConfigMaps)[:1], opts)
		if _, ok := actions(res)["configmap/beta"]; ok {
			t.Errorf("beta reported without prune: %v", actions(res))
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "beta", metav1.GetOptions{}); err != nil {
			t.Errorf("beta deleted without prune: %v", err)
		}
	})

	t.Run("a deferred prune keeps what left the set until prune is allowed", func(t *testing.T) {
		ns := uniqueName("deferprune")
		opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Prune: true}
		mustReconcile(t, r, parse(t, ns, twoConfigMaps), opts)
		held := opts
		held.DeferPrune = true
		for range 2 { // and again: it stays in the inventory while held
			res := mustReconcile(t, r, parse(t, ns, twoConfigMaps)[:1], held)
			if a := actions(res)["configmap/beta"]; a != PruneDeferred {
				t.Errorf("beta while prune is held: %q, want %q", a, PruneDeferred)
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "beta", metav1.GetOptions{}); err != nil {
				t.Fatalf("beta deleted while prune is held: %v", err)
			}
		}
		res := mustReconcile(t, r, parse(t, ns, twoConfigMaps)[:1], opts)
		if a := actions(res)["configmap/beta"]; a != Pruned {
			t.Errorf("beta once prune is allowed: %q, want %q", a, Pruned)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "beta", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("beta after the held prune was allowed: %v, want not found", err)
		}
	})
}

func TestCRDAndCustomResourceInOneSet(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("crd")
	group := ns + ".example.com"
	set := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.{{group}}}
spec:
  group: {{group}}
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: v1
kind: Namespace
metadata: {name: {{ns}}}
---
apiVersion: {{group}}/v1
kind: Widget
metadata: {name: gear, namespace: {{ns}}}
spec: {size: 3}
`
	set = strings.ReplaceAll(set, "{{group}}", group)
	opts := Options{Name: ns, Namespace: ns}
	res := mustReconcile(t, r, parse(t, ns, set), opts)
	want := map[string]Action{
		"customresourcedefinition.apiextensions.k8s.io/widgets." + group: Created,
		"namespace/" + ns:           Created,
		"widget." + group + "/gear": Created,
	}
	if d := cmp.Diff(want, actions(res)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	res = mustReconcile(t, r, parse(t, ns, set), opts)
	if res.Count(Unchanged) != 3 || res.Requests.Writes != 0 {
		t.Errorf("second reconcile: %v, %d writes; want all unchanged, no writes", actions(res), res.Requests.Writes)
	}
}

func TestRejectedObjectLeavesClusterUntouched(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("reject")
	cs := clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	set := twoConfigMaps + `
---
apiVersion: v1
kind: Service
metadata: {name: broken}
spec:
  ports: [{port: 99999}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: noselector}
spec:
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: nginx}]}
`
	res, err := r.Reconcile(t.Context(), parse(t, ns, set), Options{Name: ns, Namespace: ns})
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want an InvalidError", err)
	}
	if len(invalid.Problems) != 2 {
		t.Errorf("%d problems, want one per rejected object (2):\n%v", len(invalid.Problems), err)
	}
	for _, want := range []string{"2 object(s) rejected, nothing applied", "service/broken", "99999", "deployment.apps/noselector", "selector"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if res.Requests.Writes != 0 {
		t.Errorf("%d writes after a rejected set, want 0", res.Requests.Writes)
	}
	cms, _ := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	for _, cm := range cms.Items {
		if cm.Name == "alpha" || cm.Name == "beta" {
			t.Errorf("configmap %s was applied although the set was rejected", cm.Name)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("flotilla-system").Get(t.Context(), inventoryConfigMapName(ns), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an inventory was written for a rejected set (err %v)", err)
	}
}

func ownsByApplyTyped(mfs []metav1.ManagedFieldsEntry) bool {
	for _, mf := range mfs {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func TestRemove(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("remove")
	cs := clientset(t)
	set := twoConfigMaps + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: keeper
  annotations: {flotilla.dev/prune: disabled}
`
	mustReconcile(t, r, parse(t, ns, set), Options{Name: ns, Namespace: ns, CreateNamespace: true})
	names, err := r.Inventories(t.Context())
	if err != nil || !slices.Contains(names, ns) {
		t.Fatalf("inventories = %v (err %v), want %s among them", names, err, ns)
	}
	res, err := r.Remove(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Action{"configmap/alpha": Pruned, "configmap/beta": Pruned, "configmap/keeper": PruneSkipped}
	if d := cmp.Diff(want, actions(res)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "keeper", metav1.GetOptions{}); err != nil {
		t.Errorf("keeper deleted: %v", err)
	}
	if names, _ := r.Inventories(t.Context()); slices.Contains(names, ns) {
		t.Errorf("inventory %s still there after Remove", ns)
	}
	if _, err := r.Remove(t.Context(), ns); err != nil {
		t.Errorf("removing a removed assignment: %v", err)
	}
}
