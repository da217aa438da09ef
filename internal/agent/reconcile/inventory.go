package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// serviceAccount applied the objects (nil: the agent itself); pruning them, and removing
	// the whole assignment after its tombstone, acts as the same one. Only the agent writes
	// inventories, so no project can name another's ServiceAccount here.
	serviceAccount *ServiceAccount
}

type inventoryEntry struct {
	ref  ObjectRef
	hash string
	// drifted: the last reconcile found the object changed by hand and left it so (self-heal
	// off); Options.SkipUnchanged never takes such an object for unchanged, so that the drift
	// stays reported until it is healed.
	drifted bool
}

// inventoryKey is the ConfigMap data key: a JSON array with one object per line, sorted, so
// that no name, however malformed, can break an entry and diffs read well. A 6,500-object
// inventory stays well under the 1 MiB object limit.
const inventoryKey = "objects.json"

// legacyInventoryKey held "namespace_name_group_kind version hash" lines (before 0.4). It is
// still read, and replaced by inventoryKey at the next write.
const legacyInventoryKey = "objects"

// inventoryRecord is one entry as stored. Short keys keep large inventories small.
type inventoryRecord struct {
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n"`
	Group     string `json:"g,omitempty"`
	Version   string `json:"v"`
	Kind      string `json:"k"`
	Hash      string `json:"h"`
	Drifted   bool   `json:"d,omitempty"`
}

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
	for _, e := range inv.entries {
		data, _ := json.Marshal(inventoryRecord{
			Namespace: e.ref.Namespace, Name: e.ref.Name, Group: e.ref.Group,
			Version: e.ref.Version, Kind: e.ref.Kind, Hash: e.hash, Drifted: e.drifted,
		}) // strings only: cannot fail
		lines = append(lines, string(data))
	}
	sort.Strings(lines)
	return "[\n" + strings.Join(lines, ",\n") + "\n]\n"
}

// decodeInventory reads an inventory ConfigMap's data. Every entry must name a kind, a version
// and an object: an inventory that cannot be read whole is refused, never half-read, because
// what it leaves out would be neither pruned nor protected.
func decodeInventory(name string, data map[string]string) (*inventory, error) {
	inv := newInventory(name)
	if raw, ok := data[inventoryKey]; ok {
		var records []inventoryRecord
		if err := json.Unmarshal([]byte(raw), &records); err != nil {
			return nil, fmt.Errorf("key %s: %w", inventoryKey, err)
		}
		for i, rec := range records {
			if rec.Name == "" || rec.Kind == "" || rec.Version == "" || rec.Hash == "" {
				return nil, fmt.Errorf("key %s: entry %d (%+v) lacks a kind, version, name or hash", inventoryKey, i+1, rec)
			}
			ref := ObjectRef{Namespace: rec.Namespace, Name: rec.Name, Group: rec.Group, Kind: rec.Kind, Version: rec.Version}
			inv.entries[ref.id()] = inventoryEntry{ref: ref, hash: rec.Hash, drifted: rec.Drifted}
		}
		return inv, nil
	}
	for i, line := range strings.Split(data[legacyInventoryKey], "\n") {
		if line == "" {
			continue
		}
		ref, hash, ok := parseLegacyEntry(line)
		if !ok {
			return nil, fmt.Errorf("key %s line %d: malformed entry %q", legacyInventoryKey, i+1, line)
		}
		inv.entries[ref.id()] = inventoryEntry{ref: ref, hash: hash}
	}
	return inv, nil
}

// parseLegacyEntry reads "namespace_name_group_kind version hash". Namespaces, groups and
// kinds cannot contain "_", but names can (RBAC names, and invalid names that older agents
// recorded before validating them), so the name is everything between the first "_" and the
// last two.
func parseLegacyEntry(line string) (ObjectRef, string, bool) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return ObjectRef{}, "", false
	}
	parts := strings.Split(f[0], "_")
	n := len(parts)
	if n < 4 || parts[n-1] == "" {
		return ObjectRef{}, "", false
	}
	ref := ObjectRef{Namespace: parts[0], Name: strings.Join(parts[1:n-2], "_"), Group: parts[n-2], Kind: parts[n-1], Version: f[1]}
	if ref.Name == "" {
		return ObjectRef{}, "", false
	}
	return ref, f[2], true
}

func (inv *inventory) equal(o *inventory) bool {
	return inv.encode() == o.encode() && sameAccount(inv.serviceAccount, o.serviceAccount)
}

func sameAccount(a, b *ServiceAccount) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ServiceAccountAnnotation on an inventory ConfigMap names the ServiceAccount
// ("NAMESPACE/NAME") that applied its objects; absent, the agent applied them itself.
const ServiceAccountAnnotation = "flotilla.dev/service-account"

func accountOf(annotations map[string]string) *ServiceAccount {
	ns, name, ok := strings.Cut(annotations[ServiceAccountAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return nil
	}
	return &ServiceAccount{Namespace: ns, Name: name}
}

// unreadableInventory is an inventory ConfigMap that cannot be decoded. Its assignment cannot
// be reconciled or removed until someone repairs it; every other assignment carries on.
type unreadableInventory struct {
	name, configMap string
	err             error
}

func (u *unreadableInventory) Error() string {
	return fmt.Sprintf("inventory of %q (ConfigMap %s) cannot be read: %v; nothing of %q is applied "+
		"or pruned until it is repaired. To recover, check the objects it lists, then delete it "+
		"(kubectl delete configmap -n %s) and the next reconcile writes a new one "+
		"from the manifests; objects only the old one listed are then no longer pruned",
		u.name, u.configMap, u.err, u.name, strings.Replace(u.configMap, "/", " ", 1))
}

// inventories is every inventory in the cluster, by assignment name.
type inventories struct {
	readable   map[string]*inventory
	unreadable map[string]*unreadableInventory
}

// of returns the assignment's inventory: nil without one, an error if it cannot be read.
func (invs *inventories) of(name string) (*inventory, error) {
	if u, ok := invs.unreadable[name]; ok {
		return nil, u
	}
	return invs.readable[name], nil
}

// loadInventories reads every assignment's inventory with one LIST. One that cannot be decoded
// is set aside, so that it fails only its own assignment.
func (r *Reconciler) loadInventories(ctx context.Context) (*inventories, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	err := r.agent.List(ctx, list, client.InNamespace(r.cfg.InventoryNamespace), client.HasLabels{InventoryLabel})
	if err != nil {
		return nil, fmt.Errorf("list inventories in namespace %s: %w", r.cfg.InventoryNamespace, err)
	}
	invs := &inventories{readable: map[string]*inventory{}, unreadable: map[string]*unreadableInventory{}}
	for _, cm := range list.Items {
		name := cm.GetAnnotations()[InventoryLabel]
		if name == "" {
			name = cm.GetLabels()[InventoryLabel]
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		inv, err := decodeInventory(name, data)
		if err != nil {
			invs.unreadable[name] = &unreadableInventory{name: name, configMap: cm.GetNamespace() + "/" + cm.GetName(), err: err}
			continue
		}
		inv.serviceAccount = accountOf(cm.GetAnnotations())
		invs.readable[name] = inv
	}
	return invs, nil
}

// saveInventory writes inv with server-side apply, as the agent, creating the inventory
// namespace if it does not exist (it does where deploy/agent installed the agent, which then
// needs no right on namespaces).
func (r *Reconciler) saveInventory(ctx context.Context, inv *inventory) error {
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(r.cfg.InventoryNamespace)
	cm.SetName(inventoryConfigMapName(inv.name))
	// The label value must be a valid label value; the annotation holds the exact name.
	cm.SetLabels(map[string]string{InventoryLabel: labelValue(inv.name), "app.kubernetes.io/managed-by": "flotilla"})
	annotations := map[string]string{InventoryLabel: inv.name}
	if inv.serviceAccount != nil {
		annotations[ServiceAccountAnnotation] = inv.serviceAccount.String()
	}
	cm.SetAnnotations(annotations)
	// The legacy key is left out, so the apply removes it.
	if err := unstructured.SetNestedField(cm.Object, inv.encode(), "data", inventoryKey); err != nil {
		return err
	}
	apply := func() error {
		return r.agent.Apply(ctx, client.ApplyConfigurationFromUnstructured(cm.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership)
	}
	err := apply()
	if apierrors.IsNotFound(err) {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(r.cfg.InventoryNamespace)
		if err := r.agent.Apply(ctx, client.ApplyConfigurationFromUnstructured(ns), client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("create inventory namespace %s: %w", r.cfg.InventoryNamespace, err)
		}
		err = apply()
	}
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
