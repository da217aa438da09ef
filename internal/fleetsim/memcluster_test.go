package fleetsim

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
)

func configMap(name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name},
		"data":     map[string]any{"v": value},
	}}
}

func TestMemCluster(t *testing.T) {
	t.Parallel()
	steps := []struct {
		name    string
		objects []*unstructured.Unstructured
		prune   bool
		want    map[reconcile.Action]int
		counts  Counts
	}{
		{"creates new objects", []*unstructured.Unstructured{configMap("a", "1"), configMap("b", "1")}, true,
			map[reconcile.Action]int{reconcile.Created: 2}, Counts{Writes: 2}},
		{"does not write unchanged objects", []*unstructured.Unstructured{configMap("a", "1"), configMap("b", "1")}, true,
			map[reconcile.Action]int{reconcile.Unchanged: 2}, Counts{Writes: 2, Unchanged: 2}},
		{"configures a changed object", []*unstructured.Unstructured{configMap("a", "2"), configMap("b", "1")}, true,
			map[reconcile.Action]int{reconcile.Configured: 1, reconcile.Unchanged: 1}, Counts{Writes: 3, Unchanged: 3}},
		{"keeps what left the set without prune", []*unstructured.Unstructured{configMap("a", "2")}, false,
			map[reconcile.Action]int{reconcile.Unchanged: 1}, Counts{Writes: 3, Unchanged: 4}},
		{"prunes what left the set", []*unstructured.Unstructured{configMap("a", "2")}, true,
			map[reconcile.Action]int{reconcile.Unchanged: 1, reconcile.Pruned: 1}, Counts{Writes: 3, Unchanged: 5, Pruned: 1}},
	}
	c := NewMemCluster("c")
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res, err := c.Reconcile(t.Context(), s.objects, reconcile.Options{Name: "web", Namespace: "web", Prune: s.prune})
			if err != nil {
				t.Fatal(err)
			}
			for action, n := range s.want {
				if got := res.Count(action); got != n {
					t.Errorf("%s: %d, want %d (%+v)", action, got, n, res.Objects)
				}
			}
			if got := c.Counts(); got != s.counts {
				t.Errorf("counts %+v, want %+v", got, s.counts)
			}
		})
	}
	if names, _ := c.Inventories(t.Context()); len(names) != 1 || names[0] != "web" {
		t.Errorf("inventories %v, want [web]", names)
	}

	t.Run("the same objects pushed with their namespace give the same digest", func(t *testing.T) {
		other := NewMemCluster("c")
		o := configMap("a", "2")
		o.SetNamespace("web")
		_, id, content, err := hashObject(o, "")
		if err != nil {
			t.Fatal(err)
		}
		other.apply("web", id, content)
		if other.Digest() != c.Digest() {
			t.Error("digests differ")
		}
		other.apply("web", id, content+1)
		if other.Digest() == c.Digest() {
			t.Error("digests equal after a change")
		}
	})
	t.Run("removes an assignment", func(t *testing.T) {
		res, _ := c.Remove(t.Context(), "web")
		if res.Count(reconcile.Pruned) != 1 || c.Objects() != 0 {
			t.Errorf("pruned %d, %d objects left", res.Count(reconcile.Pruned), c.Objects())
		}
	})
}
