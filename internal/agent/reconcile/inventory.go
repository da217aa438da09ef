package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inventory is the record, kept in the cluster, of what one assignment applied: which objects,
// and the hash of the desired content each was last applied with. It lives in a ConfigMap so
// that pruning still works after an agent loses its disk.
type inventory struct {
	name    string
	entries map[string]inventoryEntry // by ObjectRef.id()
}

type inventoryEntry struct {
	ref  ObjectRef
	hash string
}

// inventoryKey is the ConfigMap data key: one "id version hash" line per object, sorted, so a
// 6,500-object inventory stays well under the 1 MiB object limit and diffs read well.
const inventoryKey = "objects"

func newInventory(name string) *inventory {
	return &inventory{name: name, entries: map[string]inventoryEntry{}}
}

// configMapName is the inventory's ConfigMap name: "inventory-NAME", or a hash of the name
// when NAME is not a valid object name.
func inventoryConfigMapName(assignment string) string {
	n := "inventory-" + assignment
	if len(validation.IsDNS1123Subdomain(n)) == 0 && len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(assignment))
	return "inventory-" + hex.EncodeToString(sum[:10])
}

func (inv *inventory) encode() string {
	lines := make([]string, 0, len(inv.entries))
	for id, e := range inv.entries {
		lines = append(lines, id+" "+e.ref.Version+" "+e.hash)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func decodeInventory(name, data string) (*inventory, error) {
	inv := newInventory(name)
	for i, line := range strings.Split(data, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		parts := strings.Split(f[0], "_")
		if len(f) != 3 || len(parts) != 4 {
			return nil, fmt.Errorf("inventory of %q line %d: malformed entry %q", name, i+1, line)
		}
		ref := ObjectRef{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3], Version: f[1]}
		inv.entries[f[0]] = inventoryEntry{ref: ref, hash: f[2]}
	}
	return inv, nil
}

func (inv *inventory) equal(o *inventory) bool {
	return inv.encode() == o.encode()
}

// loadInventories reads every assignment's inventory with one LIST.
func (r *Reconciler) loadInventories(ctx context.Context) (map[string]*inventory, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	err := r.client.List(ctx, list, client.InNamespace(r.cfg.InventoryNamespace), client.HasLabels{InventoryLabel})
	if err != nil {
		return nil, fmt.Errorf("list inventories in namespace %s: %w", r.cfg.InventoryNamespace, err)
	}
	invs := map[string]*inventory{}
	for _, cm := range list.Items {
		name := cm.GetAnnotations()[InventoryLabel]
		if name == "" {
			name = cm.GetLabels()[InventoryLabel]
		}
		data, _, _ := unstructured.NestedString(cm.Object, "data", inventoryKey)
		inv, err := decodeInventory(name, data)
		if err != nil {
			return nil, err
		}
		invs[name] = inv
	}
	return invs, nil
}

// saveInventory writes inv with server-side apply, creating the inventory namespace the first
// time.
func (r *Reconciler) saveInventory(ctx context.Context, inv *inventory, first bool) error {
	if first {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(r.cfg.InventoryNamespace)
		if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(ns), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("create inventory namespace %s: %w", r.cfg.InventoryNamespace, err)
		}
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(r.cfg.InventoryNamespace)
	cm.SetName(inventoryConfigMapName(inv.name))
	// The label value must be a valid label value; the annotation holds the exact name.
	cm.SetLabels(map[string]string{InventoryLabel: labelValue(inv.name), "app.kubernetes.io/managed-by": "flotilla"})
	cm.SetAnnotations(map[string]string{InventoryLabel: inv.name})
	if err := unstructured.SetNestedField(cm.Object, inv.encode(), "data", inventoryKey); err != nil {
		return err
	}
	err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("write inventory %s/%s: %w", r.cfg.InventoryNamespace, cm.GetName(), err)
	}
	return nil
}

func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:10])
}

// isNotFoundOrGone tells the errors that mean "already deleted".
func isNotFoundOrGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsGone(err)
}
