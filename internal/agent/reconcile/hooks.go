package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helm's annotations, as a chart's objects carry them (Options.Hooks).
const (
	// HookAnnotation makes an object a hook: "pre-install,pre-upgrade", "post-install", ...
	HookAnnotation = "helm.sh/hook"
	// HookWeightAnnotation orders hooks of one phase, lowest first ("-5", "0", "10").
	HookWeightAnnotation = "helm.sh/hook-weight"
	// HookDeletePolicyAnnotation: before-hook-creation (the default), hook-succeeded,
	// hook-failed, comma-separated.
	HookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
	// ResourcePolicyAnnotation "keep" keeps an object when it leaves the set, as
	// flotilla.dev/prune: disabled does.
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	// HookOfAnnotation marks every hook object flotilla creates with the assignment's name:
	// only such an object (or one of the assignment's own inventory) is ever deleted or
	// replaced as a hook, so that a chart cannot name a hook after another release's object
	// or a hand-made one and have it deleted.
	HookOfAnnotation = "flotilla.dev/hook-of"
	// HooksRanForAnnotation on an inventory ConfigMap is the digest of the rendered set
	// (objects and hooks) whose install or upgrade last succeeded with its hooks: hooks run
	// again only when the set differs from it, never on a drift reconcile.
	HooksRanForAnnotation = "flotilla.dev/hooks-ran-for"
)

// hooksFieldManager writes HooksRanForAnnotation, apart from the inventory's own apply, which
// therefore never removes it.
const hooksFieldManager = "flotilla-hooks"

// The hook events flotilla runs; the others (pre/post-delete, pre/post-rollback, test) are
// dropped: a release leaves a cluster by prune, and a rollback is a new revision, an upgrade.
const (
	preInstall  = "pre-install"
	preUpgrade  = "pre-upgrade"
	postInstall = "post-install"
	postUpgrade = "post-upgrade"
)

// droppedEvents are Helm's other events; an object whose events are all among them is not
// applied at all, as `helm install` would not apply it.
var droppedEvents = map[string]bool{
	"pre-delete": true, "post-delete": true, "pre-rollback": true, "post-rollback": true,
	"test": true, "test-success": true, "test-failure": true,
}

// Delete policies.
const (
	beforeHookCreation = "before-hook-creation"
	hookSucceeded      = "hook-succeeded"
	hookFailed         = "hook-failed"
)

// hookEvents reads an object's helm.sh/hook annotation: its events, and whether it is a hook
// at all. An unknown event makes Helm skip the object (known=false), and so does flotilla.
func hookEvents(annotations map[string]string) (events map[string]bool, isHook, known bool) {
	v, ok := annotations[HookAnnotation]
	if !ok {
		return nil, false, true
	}
	events = map[string]bool{}
	for _, e := range strings.Split(v, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == preInstall || e == preUpgrade || e == postInstall || e == postUpgrade || droppedEvents[e]:
			events[e] = true
		default:
			return nil, true, false
		}
	}
	return events, true, true
}

// dropInapplicableHooks removes the objects that are hooks of events flotilla does not run
// (see droppedEvents) or of an event Helm does not know, before they are even prepared.
func dropInapplicableHooks(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, o := range objects {
		events, isHook, known := hookEvents(o.GetAnnotations())
		if !isHook {
			out = append(out, o)
			continue
		}
		if known && (events[preInstall] || events[preUpgrade] || events[postInstall] || events[postUpgrade]) {
			out = append(out, o)
		}
	}
	return out
}

// hook is one hook object of the set.
type hook struct {
	it       *item
	events   map[string]bool
	weight   int
	policies map[string]bool
}

// hookSet is the hooks of one reconcile and what it decided about them.
type hookSet struct {
	hooks []*hook
	// digest identifies the whole rendered set (see setDigest).
	digest string
	// run: the set changed since the hooks last ran to success; install: the assignment had
	// no inventory before this reconcile (pre-install/post-install, else the -upgrade ones).
	run, install bool
	// own is the assignment's inventory before this reconcile; claimedBy the objects other
	// assignments' inventories hold.
	own       *inventory
	claimedBy map[string]string
}

// splitHooks takes the hooks out of the prepared items (with Options.Hooks) and computes the
// digest of the whole set. Without hooks in the set, the hookSet is empty and costs nothing.
func splitHooks(items []*item, opts Options) ([]*item, *hookSet) {
	hs := &hookSet{}
	if !opts.Hooks {
		return items, hs
	}
	rest := items[:0:0]
	for _, it := range items {
		events, isHook, _ := hookEvents(it.desired.GetAnnotations())
		if !isHook {
			rest = append(rest, it)
			continue
		}
		h := &hook{it: it, events: events, policies: map[string]bool{}}
		// As Helm: a weight that is not an integer counts as 0.
		h.weight, _ = strconv.Atoi(strings.TrimSpace(it.desired.GetAnnotations()[HookWeightAnnotation]))
		for _, p := range strings.Split(it.desired.GetAnnotations()[HookDeletePolicyAnnotation], ",") {
			if p = strings.TrimSpace(p); p != "" {
				h.policies[p] = true
			}
		}
		if len(h.policies) == 0 {
			h.policies[beforeHookCreation] = true // Helm's default
		}
		hs.hooks = append(hs.hooks, h)
	}
	if len(hs.hooks) > 0 {
		hs.digest = setDigest(items)
	}
	// Stable: the items are in apply order (kind, namespace, name) already.
	sort.SliceStable(hs.hooks, func(i, j int) bool { return hs.hooks[i].weight < hs.hooks[j].weight })
	return rest, hs
}

// items are the hooks' items, for the checks every object of the set passes (bounds).
func (hs *hookSet) items() []*item {
	out := make([]*item, len(hs.hooks))
	for i, h := range hs.hooks {
		out[i] = h.it
	}
	return out
}

// withHooks is items and the hooks' items.
func withHooks(items []*item, hs *hookSet) []*item {
	if len(hs.hooks) == 0 {
		return items
	}
	return append(append(make([]*item, 0, len(items)+len(hs.hooks)), items...), hs.items()...)
}

// setDigest identifies a rendered set by its objects and the content each is applied with.
func setDigest(items []*item) string {
	lines := make([]string, len(items))
	for i, it := range items {
		lines[i] = it.ref.id() + " " + it.hash
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// decideHooks reads whether this set's hooks already ran (the digest recorded on the
// inventory) and whether this is an install or an upgrade.
func (r *Reconciler) decideHooks(ctx context.Context, hs *hookSet, own *inventory, exists bool, claimedBy map[string]string, opts Options) error {
	if len(hs.hooks) == 0 || opts.DryRun {
		return nil
	}
	hs.own, hs.claimedBy, hs.install = own, claimedBy, !exists
	if !exists {
		hs.run = true
		return nil
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	err := r.agent.Get(ctx, client.ObjectKey{Namespace: r.cfg.InventoryNamespace, Name: inventoryConfigMapName(opts.Name)}, cm)
	if err != nil && !isNotFoundOrGone(err) {
		return fmt.Errorf("read which hooks ran from inventory %s/%s: %w", r.cfg.InventoryNamespace, inventoryConfigMapName(opts.Name), err)
	}
	ranFor := cm.GetAnnotations()[HooksRanForAnnotation]
	hs.run = ranFor != hs.digest
	// An install that failed (a pre-install hook, say) left an inventory of objects it meant
	// to apply: its retry is still an install, as long as nothing was ever applied.
	hs.install = ranFor == "" && neverApplied(own)
	return nil
}

// neverApplied: every object of the inventory was only recorded before an apply that did
// not happen (recordPending's "pending").
func neverApplied(own *inventory) bool {
	for _, e := range own.entries {
		if e.hash != "pending" {
			return false
		}
	}
	return true
}

// event is the Helm event of the pre (or post) phase of this reconcile.
func (hs *hookSet) event(pre bool) string {
	switch {
	case pre && hs.install:
		return preInstall
	case pre:
		return preUpgrade
	case hs.install:
		return postInstall
	}
	return postUpgrade
}

// phase returns the hooks of the pre (or post) phase this reconcile runs, in order.
func (hs *hookSet) phase(pre bool) []*hook {
	if !hs.run {
		return nil
	}
	var out []*hook
	for _, h := range hs.hooks {
		if h.events[hs.event(pre)] {
			out = append(out, h)
		}
	}
	return out
}

// runHooks runs the pre (or post) hooks of this reconcile, one at a time in order: each is
// deleted first when its policy says before-hook-creation (so that a Job runs anew), applied,
// and waited for (a Job until Complete, a Pod until Succeeded, anything else until Current by
// kstatus). The first hook that fails stops the rest and fails the reconcile with its
// message.
func (r *Reconciler) runHooks(ctx context.Context, hs *hookSet, pre bool, opts Options) error {
	for _, h := range hs.phase(pre) {
		if err := r.runHook(ctx, hs, h, opts); err != nil {
			where := h.it.ref.String()
			if h.it.ref.Namespace != "" {
				where += fmt.Sprintf(" in namespace %q", h.it.ref.Namespace)
			}
			return fmt.Errorf("%s hook %s: %w", hs.event(pre), where, err)
		}
	}
	return nil
}

func (r *Reconciler) runHook(ctx context.Context, hs *hookSet, h *hook, opts Options) error {
	it := h.it
	if other, ok := hs.claimedBy[it.ref.id()]; ok {
		return fmt.Errorf("assignment %q holds this object; a hook never replaces it", other)
	}
	if err := r.getInto(ctx, it); err != nil {
		return err
	}
	if it.live != nil {
		_, inOwn := hs.own.entries[it.ref.id()]
		if it.live.GetAnnotations()[HookOfAnnotation] != opts.Name && !inOwn {
			return fmt.Errorf("it exists and is not a hook of assignment %q; a hook never replaces another object", opts.Name)
		}
		if h.policies[beforeHookCreation] {
			if err := r.deleteHook(ctx, it, opts, true); err != nil {
				return err
			}
		}
	}
	desired := it.desired.DeepCopy()
	annotations := desired.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HookOfAnnotation] = opts.Name
	desired.SetAnnotations(annotations)
	if err := r.serverApply(ctx, desired, false, true); err != nil {
		return fmt.Errorf("apply failed: %s", apiReason(err))
	}
	werr := r.waitHook(ctx, it, opts)
	switch {
	case werr == nil && h.policies[hookSucceeded], werr != nil && h.policies[hookFailed]:
		if err := r.deleteHook(ctx, it, opts, false); err != nil {
			if werr != nil {
				return fmt.Errorf("%w; and %w", werr, err)
			}
			return err
		}
	}
	return werr
}

// waitHook polls the hook until it is done, it failed, or Options.Timeout.
func (r *Reconciler) waitHook(ctx context.Context, it *item, opts Options) error {
	deadline := r.newTimer(opts.Timeout)
	for {
		if err := r.getInto(ctx, it); err != nil {
			return err
		}
		done, failed, msg := hookDone(it.live)
		switch {
		case failed:
			return fmt.Errorf("failed: %s", msg)
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("not done after %s: %s", opts.Timeout, msg)
		case <-r.newTimer(r.cfg.PollInterval):
		}
	}
}

// hookDone says whether a hook finished: a Job by its Complete or Failed condition (kstatus
// calls a running Job Current), a Pod by its phase, anything else by kstatus.
func hookDone(live *unstructured.Unstructured) (done, failed bool, msg string) {
	if live == nil {
		return false, false, "not found"
	}
	switch gk := live.GroupVersionKind().GroupKind(); {
	case gk.Group == "batch" && gk.Kind == "Job":
		conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			reason, _ := m["reason"].(string)
			message, _ := m["message"].(string)
			switch m["type"] {
			case "Complete":
				return true, false, "complete"
			case "Failed":
				return false, true, strings.TrimPrefix(reason+": "+message, ": ")
			}
		}
		return false, false, "job not complete"
	case gk.Group == "" && gk.Kind == "Pod":
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		message, _, _ := unstructured.NestedString(live.Object, "status", "message")
		switch phase {
		case "Succeeded":
			return true, false, "succeeded"
		case "Failed":
			return false, true, strings.TrimSpace("pod failed " + message)
		}
		return false, false, "pod phase " + phase
	}
	h := healthOf(live)
	switch h.Status {
	case string(status.CurrentStatus):
		return true, false, h.Message
	case string(status.FailedStatus):
		return false, true, h.Message
	}
	return false, false, h.Status + ": " + h.Message
}

// deleteHook deletes a hook's live object; with wait, until it is gone (a Job re-created
// while the old one terminates would be the old one patched).
func (r *Reconciler) deleteHook(ctx context.Context, it *item, opts Options, wait bool) error {
	policy := metav1.DeletePropagationBackground
	uid := it.live.GetUID()
	err := r.client.Delete(ctx, it.live, &client.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !isNotFoundOrGone(err) {
		return fmt.Errorf("delete the previous hook object: %s", apiReason(err))
	}
	if !wait {
		return nil
	}
	deadline := r.newTimer(opts.Timeout)
	for {
		if err := r.getInto(ctx, it); err != nil {
			return err
		}
		if it.live == nil || it.live.GetUID() != uid {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("the previous hook object is still there %s after its deletion", opts.Timeout)
		case <-r.newTimer(crdPollInterval(r.cfg.PollInterval)):
		}
	}
}

// recordHooks notes on the inventory that this set's hooks ran to success, so that the
// next reconcile of the same set (a drift check) runs none.
func (r *Reconciler) recordHooks(ctx context.Context, hs *hookSet, opts Options) error {
	if !hs.run {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{HooksRanForAnnotation: hs.digest}}})
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(r.cfg.InventoryNamespace)
	cm.SetName(inventoryConfigMapName(opts.Name))
	if err := r.agent.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(hooksFieldManager)); err != nil {
		return fmt.Errorf("record that the hooks ran on inventory %s/%s (they run again at the next reconcile): %w", cm.GetNamespace(), cm.GetName(), err)
	}
	return nil
}
