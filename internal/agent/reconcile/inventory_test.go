package reconcile

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
)

// The reproduction from issue 17: a release whose manifest the API server refuses, in a
// namespace the same run creates, must leave no trace in any inventory, so that every other
// release on the cluster carries on and the fixed manifest recovers on the next reconcile.
func TestBadInputNeverTouchesAnotherRelease(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	other, monitoring := uniqueName("other"), uniqueName("monitoring")
	otherOpts := Options{Name: other, Namespace: other, CreateNamespace: true, Prune: true}
	monOpts := Options{Name: monitoring, Namespace: monitoring, CreateNamespace: true, Prune: true}
	const valid = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"

	mustReconcile(t, r, parse(t, other, valid), otherOpts)

	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Monitor_Agent}\ndata: {a: b}\n"
	res, err := r.Reconcile(t.Context(), parse(t, monitoring, bad), monOpts)
	if !IsInvalid(err) || !strings.Contains(err.Error(), "Monitor_Agent") {
		t.Fatalf("invalid name: err = %v, want the API server's refusal naming Monitor_Agent\n%s", err, res)
	}
	if got := res.Find("ConfigMap", monitoring, "Monitor_Agent"); got == nil || got.Action != Rejected || !strings.Contains(got.Error, "Monitor_Agent") {
		t.Errorf("the refused object's own result: %+v, want rejected with the server's reason", got)
	}
	if cm := inventoryData(t, monitoring); strings.Contains(cm, "Monitor_Agent") {
		t.Errorf("the refused object entered the inventory:\n%s", cm)
	}

	// The other release is untouched by it.
	if res := mustReconcile(t, r, parse(t, other, valid), otherOpts); res.Failed() {
		t.Errorf("other release after a bad one: %s", res)
	}

	// The fixed manifest recovers at once, and nothing else of the release is pruned on a guess.
	fixed := strings.Replace(bad, "Monitor_Agent", "monitor-agent", 1)
	res = mustReconcile(t, r, parse(t, monitoring, fixed), monOpts)
	want := map[string]Action{"namespace/" + monitoring: Unchanged, "configmap/monitor-agent": Created}
	if d := cmp.Diff(want, actions(res)); d != "" {
		t.Errorf("fixed manifest (-want +got):\n%s", d)
	}
}

func TestUnreadableInventoryFailsOnlyItsOwnAssignment(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	cs := clientset(t)
	broken, healthy := uniqueName("broken"), uniqueName("healthy")
	const two = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n"
	brokenOpts := Options{Name: broken, Namespace: broken, CreateNamespace: true, Prune: true}
	mustReconcile(t, r, parse(t, broken, two), brokenOpts)
	mustReconcile(t, r, parse(t, healthy, two), Options{Name: healthy, Namespace: healthy, CreateNamespace: true, Prune: true})

	// Someone edits the inventory by hand and breaks it.
	inv, err := cs.CoreV1().ConfigMaps(inventoryNamespace).Get(t.Context(), inventoryConfigMapName(broken), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inv.Data[inventoryKey] = `[{"n": "one", "k": "ConfigMap"` // cut short
	if _, err := cs.CoreV1().ConfigMaps(inventoryNamespace).Update(t.Context(), inv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Without "two", a readable inventory would prune it: this one must prune nothing.
	onlyOne := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n"
	_, err = r.Reconcile(t.Context(), parse(t, broken, onlyOne), brokenOpts)
	for _, want := range []string{"inventory of " + `"` + broken + `"`, "cannot be read", "kubectl delete configmap -n flotilla-system " + inventoryConfigMapName(broken)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reconcile with an unreadable inventory: err = %v, want it to say %q", err, want)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(broken).Get(t.Context(), "two", metav1.GetOptions{}); err != nil {
		t.Errorf("an object of the unreadable inventory was touched: %v", err)
	}
	if _, err := r.Remove(t.Context(), broken); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("remove with an unreadable inventory: err = %v, want a refusal", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(broken).Get(t.Context(), "two", metav1.GetOptions{}); err != nil {
		t.Errorf("remove pruned on a guess: %v", err)
	}

	// Every other assignment carries on.
	if res := mustReconcile(t, r, parse(t, healthy, onlyOne), Options{Name: healthy, Namespace: healthy, CreateNamespace: true, Prune: true}); res.Count(Pruned) != 1 {
		t.Errorf("healthy release: %s, want two pruned", res)
	}
	names, err := r.Inventories(t.Context())
	if err != nil || !slices.Contains(names, broken) {
		t.Errorf("Inventories = %v, %v: want the unreadable one listed too", names, err)
	}

	// The documented recovery: delete it, and the next reconcile writes a new one.
	if err := cs.CoreV1().ConfigMaps(inventoryNamespace).Delete(t.Context(), inventoryConfigMapName(broken), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := mustReconcile(t, r, parse(t, broken, onlyOne), brokenOpts); res.Failed() {
		t.Errorf("after the recovery: %s", res)
	}
}

// An inventory written before the structured format is still read, names with "_" included
// (valid for RBAC objects), and rewritten in the new format.
func TestLegacyInventoryIsReadAndRewritten(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	cs := clientset(t)
	name := uniqueName("legacy")
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	objs := parse(t, name, `
apiVersion: v1
kind: ConfigMap
metadata: {name: kept}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader_role}
rules: []
`)
	opts := Options{Name: name, Namespace: name, Prune: true}
	mustReconcile(t, r, objs, opts)

	// Rewrite the inventory as an older agent would have written it.
	cm, err := cs.CoreV1().ConfigMaps(inventoryNamespace).Get(t.Context(), inventoryConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := decodeInventory(name, cm.Data)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for id, e := range inv.entries {
		lines = append(lines, id+" "+e.ref.Version+" "+e.hash)
	}
	// Older agents wrote it with server-side apply under their field manager, as now.
	legacy := corev1apply.ConfigMap(cm.Name, cm.Namespace).WithLabels(cm.Labels).WithAnnotations(cm.Annotations).
		WithData(map[string]string{legacyInventoryKey: strings.Join(lines, "\n")})
	if _, err := cs.CoreV1().ConfigMaps(inventoryNamespace).Apply(t.Context(), legacy, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}

	// Dropping the Role prunes it: the legacy entry with "_" in its name was read exactly.
	res := mustReconcile(t, r, objs[:1], opts)
	if got := res.Find("Role", name, "reader_role"); got == nil || got.Action != Pruned {
		t.Errorf("role from a legacy entry: %+v, want pruned\n%s", got, res)
	}
	data := inventoryData(t, name)
	if !strings.Contains(data, `"n":"kept"`) || strings.Contains(data, "reader_role") {
		t.Errorf("inventory after the rewrite:\n%s", data)
	}
	cm, _ = cs.CoreV1().ConfigMaps(inventoryNamespace).Get(t.Context(), inventoryConfigMapName(name), metav1.GetOptions{})
	if _, ok := cm.Data[legacyInventoryKey]; ok {
		t.Errorf("legacy key left beside the new one: %v", cm.Data)
	}
}

func TestInventoryEncodingSurvivesAnyName(t *testing.T) {
	t.Parallel()
	inv := newInventory("x")
	for _, ref := range []ObjectRef{
		{Version: "v1", Kind: "ConfigMap", Namespace: "a_b", Name: "c_d e\n\"f"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "system:x_y"},
	} {
		inv.entries[ref.id()+"|"+ref.Name] = inventoryEntry{ref: ref, hash: "h"}
	}
	got, err := decodeInventory("x", map[string]string{inventoryKey: inv.encode()})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.entries) != 2 {
		t.Fatalf("decoded %d entries, want 2: %+v", len(got.entries), got.entries)
	}
	for _, e := range got.entries {
		if e.ref.Name != "c_d e\n\"f" && e.ref.Name != "system:x_y" {
			t.Errorf("name not kept exactly: %q", e.ref.Name)
		}
	}
	for _, bad := range []string{`not json`, `[{"n":"a"}]`, `[{"n":"a","k":"ConfigMap","v":"v1"}]`} {
		if _, err := decodeInventory("x", map[string]string{inventoryKey: bad}); err == nil {
			t.Errorf("decoded %q without an error", bad)
		}
	}
}

func inventoryData(t *testing.T, assignment string) string {
	t.Helper()
	cm, err := clientset(t).CoreV1().ConfigMaps(inventoryNamespace).Get(t.Context(), inventoryConfigMapName(assignment), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data[inventoryKey]
}

// inventoryNamespace is where the test reconcilers (default Config) keep inventories.
const inventoryNamespace = "flotilla-system"
