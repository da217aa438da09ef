package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// item is one desired object on its way through a reconcile.
type item struct {
	ref     ObjectRef
	desired *unstructured.Unstructured
	hash    string // of the normalised desired object; recorded in the inventory
	stage   int    // 0: CRDs, namespaces, cluster RBAC; 1: the rest
	// The server cannot validate the object before stage 0 is applied when its kind comes from
	// a CRD in this same set (newKind) or its namespace does (inNewNamespace).
	newKind, inNewNamespace bool
	live                    *unstructured.Unstructured // nil when the object does not exist
	result                  ObjectResult
	apply                   bool // apply it (result.Action says why)
	force                   bool // apply with force: take fields from Update managers (drift) or, with Force, anyone
	// untracked: created for CreateNamespace; kept out of the inventory so it is never pruned.
	untracked bool
	failure   string // why the apply failed
	// namespaced: as the cluster serves the kind, or the set's CRD declares it.
	namespaced bool
	// adoptFrom are the adopted managers (Options.Adopt) holding fields of the live object.
	adoptFrom []string
	// skipped: Unchanged by its hash alone (Options.SkipUnchanged); live was not read.
	skipped bool
}

func (it *item) deferred() bool { return it.newKind || it.inNewNamespace }

func (it *item) gvk() schema.GroupVersionKind { return it.desired.GroupVersionKind() }

// prepare normalises the desired objects into items in apply order, defaulting namespaces and
// refusing duplicates and kinds the cluster does not know and the set does not define.
func (r *Reconciler) prepare(objects []*unstructured.Unstructured, opts Options) ([]*item, error) {
	// Kinds defined by CRDs in this same set: not known to the server yet, scope from the CRD.
	setKinds := map[schema.GroupKind]bool{} // value: namespaced
	for _, o := range objects {
		if ssautils.IsCRD(o) {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			setKinds[schema.GroupKind{Group: group, Kind: kind}] = scope == "Namespaced"
		}
	}
	newNamespaces := map[string]bool{}
	for _, o := range objects {
		if ssautils.IsNamespace(o) {
			newNamespaces[o.GetName()] = true
		}
	}

	sorted := make([]*unstructured.Unstructured, len(objects))
	for i, o := range objects {
		sorted[i] = o.DeepCopy()
	}
	sort.Stable(ssa.SortableUnstructureds(sorted))

	var problems []string
	items := make([]*item, 0, len(sorted))
	seen := map[string]bool{}
	for _, u := range sorted {
		gvk := u.GroupVersionKind()
		namespaced, known, err := r.scope(gvk)
		if err != nil {
			return nil, err
		}
		newKind := false
		if !known {
			ns, inSet := setKinds[gvk.GroupKind()]
			if !inSet {
				problems = append(problems, fmt.Sprintf("%s %s: the cluster has no kind %s and no CustomResourceDefinition in the set defines it", strings.ToLower(gvk.Kind), u.GetName(), gvk))
				continue
			}
			namespaced, newKind = ns, true
		}
		if namespaced {
			if u.GetNamespace() == "" {
				u.SetNamespace(opts.Namespace)
			}
		} else {
			u.SetNamespace("")
		}
		if err := normalize.Unstructured(u); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", ssautils.FmtUnstructured(u), err))
			continue
		}
		it := &item{desired: u, ref: refOf(u), newKind: newKind, namespaced: namespaced}
		if seen[it.ref.id()] {
			problems = append(problems, fmt.Sprintf("%s in namespace %q is declared twice", it.ref, it.ref.Namespace))
			continue
		}
		seen[it.ref.id()] = true
		// Whether the namespace really is new is only known after the lookup; until then
		// assume it may be.
		it.inNewNamespace = namespaced && newNamespaces[u.GetNamespace()]
		if isStageZero(u) {
			it.stage = 0
		} else {
			it.stage = 1
		}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: encode: %w", it.ref, err)
		}
		sum := sha256.Sum256(data)
		it.hash = hex.EncodeToString(sum[:12])
		it.result.ObjectRef = it.ref
		items = append(items, it)
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return items, nil
}

// scope tells whether the cluster serves gvk, and whether it is namespaced.
func (r *Reconciler) scope(gvk schema.GroupVersionKind) (namespaced, known bool, err error) {
	mapping, err := r.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("discover kind %s: %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, true, nil
}

// isStageZero: objects other objects may need to exist first.
func isStageZero(u *unstructured.Unstructured) bool {
	if ssautils.IsClusterDefinition(u) {
		return true
	}
	return u.GetKind() == "ClusterRoleBinding" && strings.HasPrefix(u.GetAPIVersion(), "rbac.authorization.k8s.io/")
}

func refOf(u *unstructured.Unstructured) ObjectRef {
	gvk := u.GroupVersionKind()
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// InvalidError lists every object the input boundary refused: rejected by the API server's
// dry-run, an unknown kind, a duplicate. Nothing was applied.
type InvalidError struct {
	Problems []string
	// AfterStageZero: the objects could only be checked once the namespaces and definitions
	// of the set existed, so those were applied; nothing else was.
	AfterStageZero bool
}

func (e *InvalidError) Error() string {
	applied := "nothing applied"
	if e.AfterStageZero {
		applied = "nothing applied but the namespaces and definitions they need"
	}
	return fmt.Sprintf("%d object(s) rejected, %s:\n  %s", len(e.Problems), applied, strings.Join(e.Problems, "\n  "))
}

// IsInvalid reports whether err is (or wraps) an *InvalidError.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}
