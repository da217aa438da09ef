package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/sync/errgroup"
)

// lookupKey groups the objects read together: one kind in one namespace ("" for
// cluster-scoped kinds).
type lookupKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// lookup fills in each item's live object. A kind and namespace with at least ListThreshold
// objects costs one LIST, so the number of reads grows with the kinds, not the objects; a group
// with fewer objects costs a GET each, which is cheaper than listing a namespace full of other
// objects. Kinds the server does not serve yet (deferred CRD kinds) are skipped.
func (r *Reconciler) lookup(ctx context.Context, items []*item) error {
	groups := map[lookupKey][]*item{}
	var keys []lookupKey
	for _, it := range items {
		if it.newKind {
			if _, known, _ := r.scope(it.gvk()); !known {
				continue
			}
			it.newKind = false
		}
		k := lookupKey{gvk: it.gvk(), namespace: it.ref.Namespace}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], it)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Concurrency)
	for _, k := range keys {
		members := groups[k]
		if len(members) >= r.cfg.ListThreshold {
			g.Go(func() error { return r.listInto(ctx, k, members) })
			continue
		}
		for _, it := range members {
			g.Go(func() error { return r.getInto(ctx, it) })
		}
	}
	return g.Wait()
}

func (r *Reconciler) listInto(ctx context.Context, k lookupKey, members []*item) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	var opts []client.ListOption
	if k.namespace != "" {
		opts = append(opts, client.InNamespace(k.namespace))
	}
	if err := r.client.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("list %s in namespace %q: %w", k.gvk.Kind, k.namespace, err)
	}
	byName := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	for _, it := range members {
		if live, ok := byName[it.ref.Name]; ok {
			live.SetGroupVersionKind(k.gvk)
			it.live = live
		} else {
			it.live = nil
		}
	}
	return nil
}

func (r *Reconciler) getInto(ctx context.Context, it *item) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(it.gvk())
	err := r.client.Get(ctx, client.ObjectKey{Namespace: it.ref.Namespace, Name: it.ref.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		it.live = nil
		return nil
	case err != nil:
		return fmt.Errorf("get %s in namespace %q: %w", it.ref, it.ref.Namespace, err)
	}
	it.live = live
	return nil
}
