package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Adopt is Release.spec.adopt as the reconciler takes it: objects that exist live and carry
// fields of these managers become flotilla's on apply, without being deleted or re-created.
type Adopt struct {
	// FromManagers are the field managers whose fields flotilla takes over ("argocd-controller",
	// "kustomize-controller", "helm-controller", "helm", "kubectl-client-side-apply").
	FromManagers []string
	// HelmRelease, when set, also drops Helm's ownership marks and deletes the release's
	// storage Secrets in HelmReleaseNamespace (default: Options.Namespace).
	HelmRelease          string
	HelmReleaseNamespace string
	// Interval is the release's: an object an adopted manager wrote less than Interval before
	// Now means that tool is still active, and the whole release is refused. Default 5 minutes.
	Interval time.Duration
	// Now is the time the refusal is judged at; zero: the reconciler's clock.
	Now time.Time
}

// Adopted is the action of an object whose fields flotilla took over from another tool.
const Adopted Action = "adopted"

// Bounds of the adopt rules, which come from Git: matching them is per managedFields entry.
const (
	maxAdoptManagers = 32
	// maxHelmSecrets bounds the storage Secrets of one Helm release that are deleted: Helm
	// keeps ten revisions by default.
	maxHelmSecrets = 1000
)

// Tracking metadata of the tools flotilla adopts from: removed from an adopted object even
// though the old tool's fields now are flotilla's, so that the old tool (or its UI) no longer
// claims the object. Prefixes end in "/".
var (
	trackingLabels      = []string{"argocd.argoproj.io/instance", "kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/"}
	trackingAnnotations = []string{"argocd.argoproj.io/tracking-id", "argocd.argoproj.io/instance", "kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/"}
	// Helm's marks, removed only with HelmRelease set: helm then no longer sees the objects
	// as its own.
	helmLabels      = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	helmAnnotations = []string{"meta.helm.sh/release-name", "meta.helm.sh/release-namespace"}
)

// checkAdopt bounds the rules and refuses names no field manager can have.
func checkAdopt(a *Adopt) error {
	if a == nil {
		return nil
	}
	if len(a.FromManagers) == 0 {
		return fmt.Errorf("adopt: fromManagers is empty: name the field managers to take over")
	}
	if len(a.FromManagers) > maxAdoptManagers {
		return fmt.Errorf("adopt: fromManagers has %d entries, more than %d", len(a.FromManagers), maxAdoptManagers)
	}
	for i, m := range a.FromManagers {
		if m == "" || len(m) > maxManagerName {
			return fmt.Errorf("adopt: fromManagers entry %d is %d bytes long: a field manager's name has 1 to %d", i+1, len(m), maxManagerName)
		}
		if m == FieldManager {
			return fmt.Errorf("adopt: fromManagers entry %d is %q, flotilla's own field manager", i+1, m)
		}
	}
	if len(a.HelmRelease) > 53 {
		return fmt.Errorf("adopt: helmRelease %q is %d bytes long: a Helm release name has at most 53", a.HelmRelease, len(a.HelmRelease))
	}
	if len(a.HelmReleaseNamespace) > 63 {
		return fmt.Errorf("adopt: helmReleaseNamespace is %d bytes long: a namespace's name has at most 63", len(a.HelmReleaseNamespace))
	}
	return nil
}

// checkAdoptBounds holds the Helm storage Secrets adoption deletes to the release's bounds:
// never in the inventory namespace, and with a project, in one of its namespaces and only
// if it allows Secrets. Otherwise helmReleaseNamespace would let a release delete Secrets
// anywhere the agent may.
func checkAdoptBounds(opts Options, inventoryNamespace string) error {
	a := opts.Adopt
	if a == nil || a.HelmRelease == "" {
		return nil
	}
	ns := a.HelmReleaseNamespace
	if ns == "" {
		ns = opts.Namespace
	}
	var problem string
	switch rules := opts.Project; {
	case ns == inventoryNamespace:
		problem = fmt.Sprintf("namespace %s holds the agent's inventories; only the agent writes there", ns)
	case rules == nil:
	case !rules.AllowsNamespace(ns):
		problem = fmt.Sprintf("namespace %s is not one of project %q's namespaces (%s)", ns, rules.Name, namespaceList(rules.Namespaces))
	case rules.KindRule("", "Secret", true) != "":
		problem = fmt.Sprintf("kind Secret is not allowed by project %q: it %s", rules.Name, rules.KindRule("", "Secret", true))
	}
	if problem == "" {
		return nil
	}
	name := ""
	if opts.Project != nil {
		name = opts.Project.Name
	}
	return &BoundsError{Project: name, Problems: []string{fmt.Sprintf("adopt: the storage Secrets of Helm release %q in namespace %q: %s", a.HelmRelease, ns, problem)}}
}

// adoptable returns the entries of live's managedFields (main resource only) that belong to
// the adopted managers.
func adoptable(live *unstructured.Unstructured, a *Adopt) []metav1.ManagedFieldsEntry {
	if live == nil || a == nil {
		return nil
	}
	var out []metav1.ManagedFieldsEntry
	for _, mf := range live.GetManagedFields() {
		if mf.Subresource == "" && slices.Contains(a.FromManagers, mf.Manager) {
			out = append(out, mf)
		}
	}
	return out
}

// markAdoptions records on each item which managers it is taken from, and refuses the whole
// set if one of them wrote an object within the interval: that tool is still syncing, and
// would fight flotilla for the object from the next sync on.
func markAdoptions(items []*item, a *Adopt, now time.Time) error {
	if a == nil {
		return nil
	}
	interval := a.Interval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	if !a.Now.IsZero() {
		now = a.Now
	}
	var active []string
	for _, it := range items {
		entries := adoptable(it.live, a)
		var from []string
		for _, mf := range entries {
			from = append(from, mf.Manager)
			if mf.Time != nil && now.Sub(mf.Time.Time) < interval {
				active = append(active, fmt.Sprintf("%s in namespace %q was written by field manager %q at %s (%s ago, within the release's interval of %s): stop %s for this application first (e.g. disable auto-sync / suspend the Kustomization), then adoption proceeds at the next reconcile",
					it.ref, it.ref.Namespace, mf.Manager, mf.Time.UTC().Format(time.RFC3339), now.Sub(mf.Time.Time).Truncate(time.Second), interval, toolOf(mf.Manager)))
			}
		}
		it.adoptFrom = dedupe(from)
	}
	if len(active) > 0 {
		return &AdoptRefusedError{Problems: dedupe(active)}
	}
	return nil
}

// AdoptRefusedError: an object to adopt was written by its old tool within the release's
// interval. Nothing was applied.
type AdoptRefusedError struct {
	Problems []string
}

func (e *AdoptRefusedError) Error() string {
	return fmt.Sprintf("adoption refused, nothing applied: the old tool is still active:\n  %s", strings.Join(e.Problems, "\n  "))
}

// toolOf names the tool behind a field manager, for people.
func toolOf(manager string) string {
	switch {
	case manager == "argocd-controller" || strings.HasPrefix(manager, "argocd"):
		return "Argo CD"
	case manager == "kustomize-controller":
		return "Flux (kustomize-controller)"
	case manager == "helm-controller":
		return "Flux (helm-controller)"
	case manager == "helm":
		return "Helm"
	case strings.HasPrefix(manager, "kubectl"):
		return "kubectl (" + manager + ")"
	}
	return fmt.Sprintf("the tool writing as field manager %q", manager)
}

// takeOver rewrites live's managedFields so that the adopted managers' field sets become
// flotilla's Apply entry, then patches them onto the object (guarded by its resourceVersion).
// The apply that follows then removes what the old tool set and Git no longer declares, its
// tracking labels and annotations among them, without touching what Git declares: a
// Deployment's pod template stays as it is unless Git changes it.
func (r *Reconciler) takeOver(ctx context.Context, it *item, a *Adopt) error {
	entries, err := adoptedEntries(it.live, a)
	if err != nil {
		return fmt.Errorf("%s in namespace %q: adopt: %w", it.ref, it.ref.Namespace, err)
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		// "replace", not "test": a concurrent write then fails as a 409 conflict in storage.
		{"op": "replace", "path": "/metadata/resourceVersion", "value": it.live.GetResourceVersion()},
	})
	if err != nil {
		return fmt.Errorf("%s: encode managedFields patch: %w", it.ref, err)
	}
	obj := it.live.DeepCopy()
	if err := r.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("%s in namespace %q: take over the fields of %s: %s", it.ref, it.ref.Namespace, strings.Join(it.adoptFrom, ", "), apiReason(err))
	}
	return nil
}

// adoptedEntries is live's managedFields with the adopted managers' main-resource entries
// merged into flotilla's Apply entry (created if there is none). With no HelmRelease, Helm's
// marks are left out of that set, so that the apply keeps them, unowned.
func adoptedEntries(live *unstructured.Unstructured, a *Adopt) ([]metav1.ManagedFieldsEntry, error) {
	var keep []metav1.ManagedFieldsEntry
	merged := &fieldpath.Set{}
	target := -1
	for _, mf := range live.GetManagedFields() {
		adopted := mf.Subresource == "" && slices.Contains(a.FromManagers, mf.Manager)
		own := mf.Subresource == "" && mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply
		if !adopted && !own {
			keep = append(keep, mf)
			continue
		}
		if mf.FieldsV1 != nil {
			var s fieldpath.Set
			if err := s.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
				return nil, fmt.Errorf("managedFields entry of %q: %w", mf.Manager, err)
			}
			merged = merged.Union(&s)
		}
		if own {
			target = len(keep)
			keep = append(keep, mf)
		}
	}
	// The tracking marks become flotilla's alone, whoever else holds them, so that the apply
	// removes them.
	tracking := trackingSet(live, a)
	merged = merged.Union(tracking)
	for i := range keep {
		if keep[i].FieldsV1 == nil || keep[i].Subresource != "" {
			continue
		}
		var s fieldpath.Set
		if err := s.FromJSON(keep[i].FieldsV1.GetRawReader()); err != nil {
			continue // not ours to judge: the entry is kept as it is
		}
		if rest := s.Difference(tracking); !rest.Equals(&s) {
			raw, err := rest.ToJSON()
			if err != nil {
				return nil, fmt.Errorf("encode the field set of %q: %w", keep[i].Manager, err)
			}
			keep[i].FieldsV1 = metav1.NewFieldsV1(string(raw))
		}
	}
	// Owning a map itself (an Update manager's "." entry) would remove it whole, with what
	// stays unowned in it (Helm's marks below), when Git declares none of its keys.
	merged = merged.Difference(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels"), fieldpath.MakePathOrDie("metadata", "annotations")))
	if a.HelmRelease == "" {
		for k, v := range helmLabels {
			if live.GetLabels()[k] == v {
				merged = merged.Difference(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels", k)))
			}
		}
		for _, k := range helmAnnotations {
			merged = merged.Difference(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", k)))
		}
	}
	raw, err := merged.ToJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the merged field set: %w", err)
	}
	if target < 0 {
		keep = append(keep, metav1.ManagedFieldsEntry{
			Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: live.GetAPIVersion(),
			FieldsType: "FieldsV1", Time: &metav1.Time{Time: time.Now().UTC().Truncate(time.Second)},
		})
		target = len(keep) - 1
	}
	keep[target].FieldsV1 = metav1.NewFieldsV1(string(raw))
	return keep, nil
}

// trackingSet are the field paths of the tracking labels and annotations live carries.
func trackingSet(live *unstructured.Unstructured, a *Adopt) *fieldpath.Set {
	set := fieldpath.NewSet()
	matches := func(k string, names []string) bool {
		for _, p := range names {
			if k == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(k, p)) {
				return true
			}
		}
		return false
	}
	annotations := trackingAnnotations
	if a.HelmRelease != "" {
		annotations = append(slices.Clone(annotations), helmAnnotations...)
	}
	for k, v := range live.GetLabels() {
		if want, ok := helmLabels[k]; matches(k, trackingLabels) || (a.HelmRelease != "" && ok && want == v) {
			set.Insert(fieldpath.MakePathOrDie("metadata", "labels", k))
		}
	}
	for k := range live.GetAnnotations() {
		if matches(k, annotations) {
			set.Insert(fieldpath.MakePathOrDie("metadata", "annotations", k))
		}
	}
	return set
}

// deleteHelmStorage deletes the storage Secrets of the adopted Helm release
// (sh.helm.release.v1.NAME.vN, type helm.sh/release.v1), so that `helm list` forgets it and a
// `helm uninstall` can no longer delete what flotilla now manages. It returns what it
// deleted.
func (r *Reconciler) deleteHelmStorage(ctx context.Context, a *Adopt, namespace string) ([]string, error) {
	if a.HelmReleaseNamespace != "" {
		namespace = a.HelmReleaseNamespace
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretListGVK)
	if err := r.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{"owner": "helm", "name": a.HelmRelease},
		// Only Helm's storage: a Secret of that name and labels but another type is someone's.
		client.MatchingFields{"type": "helm.sh/release.v1"}); err != nil {
		return nil, fmt.Errorf("list the storage Secrets of Helm release %q in namespace %q: %s", a.HelmRelease, namespace, apiReason(err))
	}
	prefix := "sh.helm.release.v1." + a.HelmRelease + ".v"
	var deleted []string
	for i := range list.Items {
		s := &list.Items[i]
		if !strings.HasPrefix(s.GetName(), prefix) {
			continue
		}
		if len(deleted) == maxHelmSecrets {
			break
		}
		err := r.client.Delete(ctx, s, client.Preconditions{UID: ptrUID(s.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete Helm storage Secret %s in namespace %q: %s", s.GetName(), namespace, apiReason(err))
		}
		deleted = append(deleted, s.GetName())
	}
	sort.Strings(deleted)
	return deleted, nil
}

var secretListGVK = schema.GroupVersionKind{Version: "v1", Kind: "SecretList"}

func ptrUID(u types.UID) *types.UID { return &u }

// finishAdoption deletes the adopted Helm release's storage once every object is applied, if
// anything was adopted in this reconcile and the rules name a Helm release.
func (r *Reconciler) finishAdoption(ctx context.Context, items []*item, opts Options) ([]string, error) {
	a := opts.Adopt
	if a == nil || a.HelmRelease == "" || opts.DryRun {
		return nil, nil
	}
	for _, it := range items {
		if it.result.Action == Adopted && it.failure == "" {
			return r.deleteHelmStorage(ctx, a, opts.Namespace)
		}
	}
	return nil, nil
}

// ownerOf names who holds a contested field, by the tool when the object or the manager
// tells it: `Argo CD application guestbook (field manager "argocd-controller")`.
func ownerOf(live *unstructured.Unstructured, manager string) string {
	fm := fmt.Sprintf("field manager %q", manager)
	labels, annotations := live.GetLabels(), live.GetAnnotations()
	argoApp := labels["argocd.argoproj.io/instance"]
	if argoApp == "" {
		argoApp = annotations["argocd.argoproj.io/instance"]
	}
	if id := annotations["argocd.argoproj.io/tracking-id"]; argoApp == "" && id != "" {
		argoApp, _, _ = strings.Cut(id, ":")
	}
	flux := func(kind, prefix string) string {
		name, ns := labels[prefix+"/name"], labels[prefix+"/namespace"]
		if ns != "" {
			name = ns + "/" + name
		}
		return fmt.Sprintf("Flux %s %s (%s)", kind, name, fm)
	}
	switch {
	case argoApp != "":
		return fmt.Sprintf("Argo CD application %s (%s)", argoApp, fm)
	case manager == "argocd-controller":
		return fmt.Sprintf("Argo CD (%s)", fm)
	case manager == "kustomize-controller" && labels["kustomize.toolkit.fluxcd.io/name"] != "":
		return flux("Kustomization", "kustomize.toolkit.fluxcd.io")
	case manager == "helm-controller" && labels["helm.toolkit.fluxcd.io/name"] != "":
		return flux("HelmRelease", "helm.toolkit.fluxcd.io")
	case manager == "helm" && annotations["meta.helm.sh/release-name"] != "":
		return fmt.Sprintf("Helm release %s (%s)", annotations["meta.helm.sh/release-name"], fm)
	}
	return fm
}
