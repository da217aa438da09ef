package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const webSet = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: frontend}
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
data: {mode: production}
`

// Drift is a change made by hand: Update operations by kubectl or any client. Each case
// makes one such change between two reconciles of the same desired state.
func TestDriftByHand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		drift func(t *testing.T, ns string)
		// what was changed, and how to read the live value back
		object    string
		wantPaths []string
		live      func(t *testing.T, ns string) string
		desired   string
		wantDrift []FieldDrift // when set, the values reported beside the paths
		manager   string       // the field manager each drifted field names
	}{
		{
			// kubectl scale writes through the scale subresource, whose fields are left
			// alone (TestKubectlScaleIsLeftAlone); a patch of replicas is drift.
			name:      "kubectl patch replicas",
			drift:     kubectl("patch", "deployment/web", "--type=merge", `-p={"spec":{"replicas":5}}`),
			object:    "deployment.apps/web",
			wantPaths: []string{".spec.replicas"},
			live:      jsonPath("deployment/web", "{.spec.replicas}"),
			desired:   "2",
			manager:   "kubectl-patch",
		},
		{
			name:      "kubectl label --overwrite",
			drift:     kubectl("label", "deployment/web", "tier=backend", "--overwrite"),
			object:    "deployment.apps/web",
			wantPaths: []string{".metadata.labels.tier"},
			live:      jsonPath("deployment/web", "{.metadata.labels.tier}"),
			desired:   "frontend",
			manager:   "kubectl-label",
		},
		{
			name:      "kubectl patch",
			drift:     kubectl("patch", "configmap/settings", "--type=merge", `-p={"data":{"mode":"debug"}}`),
			object:    "configmap/settings",
			wantPaths: []string{".data.mode"},
			live:      jsonPath("configmap/settings", "{.data.mode}"),
			desired:   "production",
			wantDrift: []FieldDrift{{Path: ".data.mode", Desired: `"production"`, Live: `"debug"`, Manager: "kubectl-patch"}},
			manager:   "kubectl-patch",
		},
		{
			name:      "kubectl delete",
			drift:     kubectl("delete", "configmap/settings"),
			object:    "configmap/settings",
			wantPaths: []string{DeletedPath},
			live: func(t *testing.T, ns string) string {
				t.Helper()
				cm, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return "(gone)"
				}
				if err != nil {
					t.Fatal(err)
				}
				return cm.Data["mode"]
			},
			desired:   "production",
			wantDrift: []FieldDrift{{Path: DeletedPath}},
		},
		{
			name: "client-side kubectl apply",
			drift: func(t *testing.T, ns string) {
				t.Helper()
				manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {mode: staging}\n"
				if _, err := testCluster.Kubectl(t.Context(), strings.NewReader(manifest), "apply", "-f", "-"); err != nil {
					t.Fatal(err)
				}
			},
			object:    "configmap/settings",
			wantPaths: []string{".data.mode"},
			live:      jsonPath("configmap/settings", "{.data.mode}"),
			desired:   "production",
			manager:   "kubectl-client-side-apply",
		},
		{
			name: "edit (get, change, update)",
			drift: func(t *testing.T, ns string) {
				t.Helper()
				cms := clientset(t).CoreV1().ConfigMaps(ns)
				cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cm.Data["mode"] = "edited"
				if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
					t.Fatal(err)
				}
			},
			object:    "configmap/settings",
			wantPaths: []string{".data.mode"},
			live:      jsonPath("configmap/settings", "{.data.mode}"),
			desired:   "production",
			manager:   "kubectl-edit",
		},
	}
	r := newTestReconciler(t)
	for _, tc := range cases {
		for _, selfHeal := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/healed", false: "/reported only"}[selfHeal]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ns := uniqueName("drift")
				opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: selfHeal}
				mustReconcile(t, r, parse(t, ns, webSet), opts)
				tc.drift(t, ns)
				drifted := tc.live(t, ns)
				if drifted == tc.desired {
					t.Fatalf("the change by hand did not happen: %s is still %q", tc.object, drifted)
				}

				res := mustReconcile(t, r, parse(t, ns, webSet), opts)
				var got *ObjectResult
				for i := range res.Objects {
					if res.Objects[i].ObjectRef.String() == tc.object {
						got = &res.Objects[i]
					}
				}
				wantAction, wantLive := Drifted, drifted
				if selfHeal {
					wantAction, wantLive = Healed, tc.desired
				}
				if got == nil || got.Action != wantAction {
					t.Fatalf("%s: result %+v, want action %s\n%s", tc.object, got, wantAction, res)
				}
				if d := cmp.Diff(tc.wantPaths, got.DriftPaths); d != "" {
					t.Errorf("drift paths (-want +got):\n%s", d)
				}
				if d := cmp.Diff(tc.wantDrift, got.Drift); tc.wantDrift != nil && d != "" {
					t.Errorf("drift values (-want +got):\n%s", d)
				}
				for _, f := range got.Drift {
					if f.Manager != tc.manager {
						t.Errorf("drift of %s names manager %q, want %q", f.Path, f.Manager, tc.manager)
					}
					if want := f.Path + " (" + tc.manager + ")"; tc.manager != "" && !strings.Contains(res.String(), want) {
						t.Errorf("the result does not say %q:\n%s", want, res)
					}
				}
				if v := tc.live(t, ns); v != wantLive {
					t.Errorf("live value after reconcile = %q, want %q", v, wantLive)
				}
				for _, o := range res.Objects {
					if o.ObjectRef.String() != tc.object && o.Action != Unchanged {
						t.Errorf("%s: %s, want unchanged", o.ObjectRef, o.Action)
					}
				}
				if selfHeal {
					// Healed means healed: the next reconcile finds nothing to do.
					again := mustReconcile(t, r, parse(t, ns, webSet), opts)
					if again.Count(Unchanged) != len(again.Objects) || again.Requests.Writes != 0 {
						t.Errorf("after healing: %v with %d writes, want all unchanged", actions(again), again.Requests.Writes)
					}
				}
			})
		}
	}
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)

	t.Run("another field manager owns the field", func(t *testing.T) {
		ns := uniqueName("conflict")
		opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, SelfHeal: true}
		mustReconcile(t, r, parse(t, ns, webSet), opts)
		// A second GitOps tool declares the same field with server-side apply.
		other := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"mode":"theirs"}}`
		_, err := clientset(t).CoreV1().ConfigMaps(ns).Patch(t.Context(), "settings", types.ApplyPatchType, []byte(other),
			metav1.PatchOptions{FieldManager: "other-gitops", Force: ptr(true)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Reconcile(t.Context(), parse(t, ns, webSet), opts)
		if err != nil {
			t.Fatalf("a conflict is a result, not an error: %v", err)
		}
		got := res.Find("ConfigMap", ns, "settings")
		if got == nil || got.Action != Conflict {
			t.Fatalf("settings: %+v, want conflict\n%s", got, res)
		}
		if d := cmp.Diff([]string{`field manager "other-gitops"`}, got.ConflictWith); d != "" {
			t.Errorf("conflict owners (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{".data.mode"}, got.ConflictPaths); d != "" {
			t.Errorf("conflict paths (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]FieldConflict{{Field: ".data.mode", Owner: `field manager "other-gitops"`}}, got.Conflicts); d != "" {
			t.Errorf("conflicts (-want +got):\n%s", d)
		}
		want := `conflict: configmap/settings in namespace "` + ns + `": .data.mode owned by field manager "other-gitops"`
		if !res.Failed() || !strings.Contains(res.String(), want) {
			t.Errorf("conflict not reported as a failure:\n%s", res)
		}
		if v := jsonPath("configmap/settings", "{.data.mode}")(t, ns); v != "theirs" {
			t.Errorf("mode = %q: flotilla fought the other manager", v)
		}

		forced := opts
		forced.Force = true
		mustReconcile(t, r, parse(t, ns, webSet), forced)
		if v := jsonPath("configmap/settings", "{.data.mode}")(t, ns); v != "production" {
			t.Errorf("with force, mode = %q, want production", v)
		}
	})

	t.Run("another assignment holds the object", func(t *testing.T) {
		ns := uniqueName("claimed")
		first := Options{Name: ns + "-first", Namespace: ns, CreateNamespace: true}
		mustReconcile(t, r, parse(t, ns, twoConfigMaps), first)

		second := Options{Name: ns + "-second", Namespace: ns}
		set := strings.Replace(twoConfigMaps, "colour: blue", "colour: red", 1) + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: gamma}
data: {only: second}
`
		res, err := r.Reconcile(t.Context(), parse(t, ns, set), second)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Action{"configmap/alpha": Conflict, "configmap/beta": Conflict, "configmap/gamma": Created}
		if d := cmp.Diff(want, actions(res)); d != "" {
			t.Errorf("actions (-want +got):\n%s", d)
		}
		if got := res.Find("ConfigMap", ns, "alpha"); got == nil || len(got.ConflictWith) != 1 || got.ConflictWith[0] != `assignment "`+first.Name+`"` {
			t.Errorf("alpha conflict owner: %+v", got)
		}
		if v := jsonPath("configmap/alpha", "{.data.colour}")(t, ns); v != "blue" {
			t.Errorf("alpha colour = %q: the second assignment overwrote the first's object", v)
		}
	})
}

func kubectl(args ...string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		if _, err := testCluster.Kubectl(t.Context(), nil, append([]string{"-n", ns}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
}

func jsonPath(object, path string) func(t *testing.T, ns string) string {
	return func(t *testing.T, ns string) string {
		t.Helper()
		out, err := testCluster.Kubectl(context.Background(), nil, "-n", ns, "get", object, "-o", "jsonpath="+path)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
}

func ptr[T any](v T) *T { return &v }

// An object deleted by hand with self-heal off stays deleted; a health wait does not sit out
// its timeout for it but reports it NotFound at once.
func TestDeletedWithoutSelfHealIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	ns := uniqueName("deleted")
	opts := Options{Name: ns, Namespace: ns, CreateNamespace: true, Wait: true, Timeout: time.Hour}
	set := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: production}\n"
	mustReconcile(t, r, parse(t, ns, set), opts)
	kubectl("delete", "configmap/settings")(t, ns)

	res, err := r.Reconcile(t.Context(), parse(t, ns, set), opts)
	if err == nil || res.Ready == nil || *res.Ready {
		t.Fatalf("reconcile: err %v, ready %v; want not ready at once\n%s", err, res.Ready, res)
	}
	got := res.Find("ConfigMap", ns, "settings")
	if got == nil || got.Action != Drifted || got.Health == nil || got.Health.Status != "NotFound" {
		t.Errorf("settings: %+v, want drifted and NotFound", got)
	}
}
