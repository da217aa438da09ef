package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
)

// inventoryEntries reads the assignment's inventory as "kind/name" -> "pending", "failed" or
// "applied" (a content hash); nil when it has none.
func inventoryEntries(t *testing.T, assignment string) map[string]string {
	t.Helper()
	cm, err := clientset(t).CoreV1().ConfigMaps(inventoryNamespace).Get(t.Context(), inventoryConfigMapName(assignment), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	inv, err := decodeInventory(assignment, cm.Data)
	if err != nil {
		t.Fatalf("inventory of %s: %v", assignment, err)
	}
	out := map[string]string{}
	for _, e := range inv.entries {
		state := "applied"
		if e.hash == "pending" || e.hash == "failed" {
			state = e.hash
		}
		out[e.ref.String()] = state
	}
	return out
}

const phaseConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
`

// A failure in each phase of a reconcile leaves what that phase promises: nothing at all
// before the dry-runs pass, the namespaces and definitions (recorded as pending) when an
// object needing them is rejected, and the full inventory when only the wait fails.
func TestFailureInEachPhase(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	cs := clientset(t)
	cases := []struct {
		name string
		// set is the objects; {{ns}} is the test's namespace, which exists unless newNamespace.
		set          string
		newNamespace bool
		opts         func(*Options)
		setup        func(t *testing.T, ns string)
		// err is a part of the error's text; is checks its type.
		err string
		is  func(error) bool
		// objects are the per-object results, inventory the entries left (nil: none written),
		// live what exists afterwards.
		objects   map[string]Action
		inventory map[string]string
		live      map[string]bool
		// ready is Result.Ready: set only with Wait.
		ready *bool
		// noRequest: refused before a single request; otherwise only writes are counted.
		noRequest bool
		writes    bool
	}{{
		name:      "options: a malformed ignore rule costs no request",
		set:       phaseConfigMap,
		opts:      func(o *Options) { o.Ignore = []IgnoreRule{{Kind: "ConfigMap", Paths: []string{"data/a"}}} },
		err:       `ignore rule 1: path "data/a"`,
		is:        func(err error) bool { return strings.HasSuffix(err.Error(), "; nothing applied") },
		live:      map[string]bool{"settings": false},
		noRequest: true,
	}, {
		name: "prepare: a kind the cluster does not serve",
		set:  phaseConfigMap + "---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n",
		err:  "the cluster has no kind example.com/v1, Kind=Gadget",
		is:   IsInvalid,
		live: map[string]bool{"settings": false},
	}, {
		name: "bound: an object in the inventory namespace",
		set:  phaseConfigMap + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: forged, namespace: flotilla-system}\n",
		err:  "namespace flotilla-system holds the agent's inventories",
		is:   IsOutOfBounds,
		live: map[string]bool{"settings": false},
	}, {
		name: "look: the tool adopted from wrote the object just now",
		set:  phaseConfigMap,
		opts: func(o *Options) { o.Adopt = &Adopt{FromManagers: []string{"old-tool"}} },
		setup: func(t *testing.T, ns string) {
			cm := corev1apply.ConfigMap("settings", ns).WithData(map[string]string{"a": "old"})
			if _, err := cs.CoreV1().ConfigMaps(ns).Apply(t.Context(), cm, metav1.ApplyOptions{FieldManager: "old-tool"}); err != nil {
				t.Fatal(err)
			}
		},
		err:  `written by field manager "old-tool"`,
		is:   func(err error) bool { var e *AdoptRefusedError; return errors.As(err, &e) },
		live: map[string]bool{"settings": true},
	}, {
		name:    "validate: the dry-run rejects an object; only it is reported",
		set:     phaseConfigMap + "---\napiVersion: v1\nkind: Service\nmetadata: {name: broken}\nspec: {ports: [{port: 99999}]}\n",
		err:     "1 object(s) rejected, nothing applied",
		is:      IsInvalid,
		objects: map[string]Action{"service/broken": Rejected},
		live:    map[string]bool{"settings": false},
	}, {
		name:         "validate after stage 0: the new namespace stays, recorded as pending",
		set:          "apiVersion: v1\nkind: Namespace\nmetadata: {name: {{ns}}}\n---\n" + phaseConfigMap + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n",
		newNamespace: true,
		err:          "nothing applied but the namespaces and definitions they need",
		is:           func(err error) bool { var e *InvalidError; return errors.As(err, &e) && e.AfterStageZero },
		objects:      map[string]Action{"namespace/{{ns}}": Created, "configmap/settings": Created, "configmap/Not_A_Name": Rejected},
		inventory:    map[string]string{"namespace/{{ns}}": "pending"},
		live:         map[string]bool{"settings": false},
		writes:       true,
	}, {
		name: "wait: what was applied is recorded before the wait gives up",
		// No controller runs in the test cluster: the Deployment never becomes available.
		set: phaseConfigMap + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
`,
		opts:      func(o *Options) { o.Wait, o.Timeout = true, 500*time.Millisecond },
		err:       "not every object became ready; see health",
		is:        func(err error) bool { var e *ApplyError; return !errors.As(err, &e) && !IsInvalid(err) },
		ready:     ptr(false),
		objects:   map[string]Action{"configmap/settings": Created, "deployment.apps/web": Created},
		inventory: map[string]string{"configmap/settings": "applied", "deployment.apps/web": "applied"},
		live:      map[string]bool{"settings": true},
		writes:    true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := uniqueName("phase")
			if !tc.newNamespace {
				if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, ns)
			}
			opts := Options{Name: ns, Namespace: ns, Prune: true}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			res, err := r.Reconcile(t.Context(), parse(t, ns, tc.set), opts)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !tc.is(err) {
				t.Fatalf("err = %v, want one containing %q of the phase's type\n%s", err, tc.err, res)
			}
			if res.Error != err.Error() {
				t.Errorf("Result.Error = %q, want the returned error", res.Error)
			}
			withNS := func(m map[string]string) map[string]string {
				if m == nil {
					return nil
				}
				out := map[string]string{}
				for k, v := range m {
					out[strings.ReplaceAll(k, "{{ns}}", ns)] = v
				}
				return out
			}
			wantObjects := map[string]Action{}
			for k, v := range tc.objects {
				wantObjects[strings.ReplaceAll(k, "{{ns}}", ns)] = v
			}
			if d := cmp.Diff(wantObjects, actions(res)); d != "" {
				t.Errorf("object results (-want +got):\n%s", d)
			}
			if d := cmp.Diff(withNS(tc.inventory), inventoryEntries(t, ns)); d != "" {
				t.Errorf("inventory (-want +got):\n%s", d)
			}
			for name, want := range tc.live {
				_, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
				if got := err == nil; got != want {
					t.Errorf("configmap %s exists: %v, want %v (get: %v)", name, got, want, err)
				}
			}
			if d := cmp.Diff(tc.ready, res.Ready); d != "" {
				t.Errorf("Result.Ready (-want +got):\n%s", d)
			}
			if tc.newNamespace {
				if _, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err != nil {
					t.Errorf("namespace %s, applied in stage 0: %v", ns, err)
				}
			}
			switch {
			case tc.noRequest && res.Requests.Total != 0:
				t.Errorf("%d requests, want none: %+v", res.Requests.Total, res.Requests)
			case !tc.writes && res.Requests.Writes != 0:
				t.Errorf("%d writes, want none: %+v", res.Requests.Writes, res.Requests)
			case tc.writes && res.Requests.Writes == 0:
				t.Errorf("no writes, want the phase's own: %+v", res.Requests)
			}
		})
	}
}
