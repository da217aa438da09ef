package reconcile

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Remove deletes what an assignment applied, as when its release leaves the cluster: every
// object of its inventory except those annotated flotilla.dev/prune: disabled, then the
// inventory itself. Removing an assignment that has no inventory does nothing.
func (r *Reconciler) Remove(ctx context.Context, name string) (*Result, error) {
	start := r.now()
	counter := &requestCounter{}
	ctx = withCounter(ctx, counter)
	res := &Result{Name: name}
	err := func() error {
		invs, err := r.loadInventories(ctx)
		if err != nil {
			return err
		}
		own, err := invs.of(name)
		if err != nil || own == nil {
			return err
		}
		// Delete as whoever applied the objects; the inventory itself as the agent.
		applier, err := r.as(own.serviceAccount)
		if err != nil {
			return err
		}
		pruned, failures, _ := applier.prune(ctx, own, nil, Options{Prune: true}, false)
		res.Objects = pruned
		if len(failures) > 0 {
			return &ApplyError{Failures: failures}
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.cfg.InventoryNamespace, Name: inventoryConfigMapName(name)}}
		if err := client.IgnoreNotFound(r.agent.Delete(ctx, cm)); err != nil {
			return fmt.Errorf("delete inventory %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		return nil
	}()
	res.Duration = r.now().Sub(start)
	res.Seconds = res.Duration.Seconds()
	res.Requests = counter.snapshot()
	if err != nil {
		err = fmt.Errorf("remove assignment %q: %w", name, err)
		res.Error = err.Error()
	}
	return res, err
}

// Inventories lists the assignments that have an inventory in the cluster, readable or not:
// after losing its disk, an agent learns from them what it applied before.
func (r *Reconciler) Inventories(ctx context.Context) ([]string, error) {
	invs, err := r.loadInventories(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(invs.readable)+len(invs.unreadable))
	for n := range invs.readable {
		names = append(names, n)
	}
	for n := range invs.unreadable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
