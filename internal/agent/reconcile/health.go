package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// waitHealthy polls the objects until each is Current or Failed by kstatus, or the timeout.
// Each poll costs the same reads as the initial lookup: one LIST per kind and namespace. It
// records every object's health and reports whether all are Current.
func (r *Reconciler) waitHealthy(ctx context.Context, items []*item, opts Options) (bool, error) {
	var watched []*item
	deletedKept := false
	for _, it := range items {
		switch {
		case it.result.Action == Conflict:
		case it.result.Action == Drifted && it.live == nil:
			// Deleted by hand and, with self-heal off, not re-created: it cannot become
			// ready, so waiting for it would only run into the timeout.
			it.result.Health = &Health{Status: "NotFound", Message: "deleted by hand; not re-created because self-heal is off"}
			deletedKept = true
		default:
			watched = append(watched, it)
		}
	}
	deadline := r.newTimer(opts.Timeout)
	for {
		if err := r.lookup(ctx, watched); err != nil {
			return false, err
		}
		settled, allCurrent := true, true
		for _, it := range watched {
			h := healthOf(it.live)
			it.result.Health = &h
			switch h.Status {
			case string(status.CurrentStatus):
			case string(status.FailedStatus):
				allCurrent = false
			default:
				settled, allCurrent = false, false
			}
		}
		if settled {
			return allCurrent && !deletedKept, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline:
			for _, it := range watched {
				if h := it.result.Health; h.Status != string(status.CurrentStatus) && h.Status != string(status.FailedStatus) {
					h.Message = fmt.Sprintf("timed out after %s: %s", opts.Timeout, h.Message)
				}
			}
			return false, nil
		case <-r.newTimer(r.cfg.PollInterval):
		}
	}
}

func healthOf(live *unstructured.Unstructured) Health {
	if live == nil {
		return Health{Status: string(status.NotFoundStatus), Message: "object not found"}
	}
	res, err := status.Compute(live)
	if err != nil {
		return Health{Status: string(status.UnknownStatus), Message: err.Error()}
	}
	return Health{Status: string(res.Status), Message: res.Message}
}

// waitEstablished waits until every CRD among the items is Established, so that objects of its
// kinds can be validated and applied.
func (r *Reconciler) waitEstablished(ctx context.Context, items []*item, opts Options) error {
	var crds []*item
	for _, it := range items {
		if ssautils.IsCRD(it.desired) && it.apply {
			crds = append(crds, it)
		}
	}
	if len(crds) == 0 {
		return nil
	}
	deadline := r.newTimer(opts.Timeout)
	for {
		if err := r.lookup(ctx, crds); err != nil {
			return err
		}
		pending := ""
		for _, it := range crds {
			if !established(it.live) {
				pending = it.ref.Name + " not established"
			}
		}
		if pending == "" {
			// Established comes a moment before the API server's discovery serves the kind:
			// until the client's mapper finds it, objects of the kind would be refused as of
			// no known kind.
			var err error
			if pending, err = r.kindNotServed(crds); err != nil || pending == "" {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("customresourcedefinition %s after %s", pending, opts.Timeout)
		case <-r.newTimer(crdPollInterval(r.cfg.PollInterval)):
		}
	}
}

// kindNotServed names a CRD among crds whose kind the client's mapper does not know yet at a
// served version, and which; "" when it knows them all.
func (r *Reconciler) kindNotServed(crds []*item) (string, error) {
	for _, it := range crds {
		group, _, _ := unstructured.NestedString(it.desired.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(it.desired.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(it.desired.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if served, _ := m["served"].(bool); !served || name == "" || kind == "" {
				continue
			}
			if _, known, err := r.scope(schema.GroupVersionKind{Group: group, Version: name, Kind: kind}); err != nil || !known {
				return fmt.Sprintf("%s established, but kind %s of version %s not yet served by discovery", it.ref.Name, kind, name), err
			}
		}
	}
	return "", nil
}

// crdPollInterval: a CRD becomes Established within a fraction of a second; polling it at the
// health interval would add up to a second to every reconcile that creates one.
func crdPollInterval(health time.Duration) time.Duration {
	return min(health, 100*time.Millisecond)
}

func established(crd *unstructured.Unstructured) bool {
	if crd == nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
