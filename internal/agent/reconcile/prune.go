package reconcile

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// prune deletes (with dryRun only lists) the objects of the old inventory that left the set,
// and returns one line per failure and the objects it failed to prune, which stay in the
// inventory so that the next reconcile tries again (a ServiceAccount denied the delete today
// may be allowed it tomorrow). Only inventory objects are ever candidates; one annotated
// flotilla.dev/prune: disabled (or Helm's helm.sh/resource-policy: keep) is kept, and one
// already gone is skipped quietly. Without Prune
// nothing happens: objects that left the set are no longer managed, as with Flux. With
// DeferPrune every one of them is kept in the inventory, untouched.
func (r *Reconciler) prune(ctx context.Context, own *inventory, items []*item, opts Options, dryRun bool) ([]ObjectResult, []string, []ObjectRef) {
	if !opts.Prune {
		return nil, nil, nil
	}
	current := make(map[string]bool, len(items))
	for _, it := range items {
		current[it.ref.id()] = true
	}
	var gone []ObjectRef
	for id, e := range own.entries {
		if !current[id] {
			gone = append(gone, e.ref)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].id() < gone[j].id() })
	if opts.DeferPrune {
		deferred := make([]ObjectResult, len(gone))
		for i, ref := range gone {
			deferred[i] = ObjectResult{ObjectRef: ref, Action: PruneDeferred}
		}
		return deferred, nil, gone // kept in the inventory: pruned once prune is allowed
	}

	results := make([]ObjectResult, len(gone))
	failures := make([]string, len(gone))
	_ = r.parallel(ctx, len(gone), func(ctx context.Context, i int) error {
		ref := gone[i]
		results[i].ObjectRef = ref
		live := &unstructured.Unstructured{}
		live.SetAPIVersion(ref.groupVersion())
		live.SetKind(ref.Kind)
		err := r.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live)
		if isNotFoundOrGone(err) {
			return nil
		}
		if err != nil {
			failures[i] = fmt.Sprintf("%s in namespace %q: read before prune: %s", ref, ref.Namespace, apiReason(err))
			return nil
		}
		if live.GetAnnotations()[PruneAnnotation] == "disabled" || live.GetAnnotations()[ResourcePolicyAnnotation] == "keep" {
			results[i].Action = PruneSkipped
			return nil
		}
		results[i].Action = Pruned
		if dryRun {
			return nil
		}
		policy := metav1.DeletePropagationBackground
		err = r.client.Delete(ctx, live, &client.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			results[i].Action = ""
			failures[i] = fmt.Sprintf("%s in namespace %q: prune failed: %s", ref, ref.Namespace, apiReason(err))
		}
		return nil
	})
	var out []ObjectResult
	var failed []string
	var kept []ObjectRef
	for i, res := range results {
		if res.Action != "" {
			out = append(out, res)
		}
		if failures[i] != "" {
			failed = append(failed, failures[i])
			kept = append(kept, gone[i])
		}
	}
	return out, failed, kept
}

func (r ObjectRef) groupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}
