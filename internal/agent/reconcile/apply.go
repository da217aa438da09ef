package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/sync/errgroup"
)

// forEach runs fn for every item with at most Config.Concurrency at a time. fn records
// per-object outcomes in its item; an error it returns aborts the rest.
func (r *Reconciler) forEach(ctx context.Context, items []*item, fn func(context.Context, *item) error) error {
	return r.parallel(ctx, len(items), func(ctx context.Context, i int) error { return fn(ctx, items[i]) })
}

// parallel runs fn for 0..n-1 with at most Config.Concurrency at a time.
func (r *Reconciler) parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Concurrency)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

func (r *Reconciler) serverApply(ctx context.Context, u *unstructured.Unstructured, dryRun, force bool) error {
	opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
}

// check validates one object with a server-side dry-run and decides what to do with it. It
// returns the API server's reason when the object is rejected.
func (r *Reconciler) check(ctx context.Context, it *item, opts Options, own *inventory) (rejected string) {
	result := it.desired.DeepCopy()
	err := r.serverApply(ctx, result, true, opts.Force)
	if err != nil && apierrors.IsConflict(err) && it.live != nil {
		others := conflictsOf(err)
		var appliers, paths []string
		var conflicts []FieldConflict
		for _, c := range others {
			if appliedBy(it.live, c.manager) && !slices.Contains(it.adoptFrom, c.manager) {
				owner := ownerOf(it.live, c.manager)
				appliers = append(appliers, owner)
				paths = append(paths, c.field)
				conflicts = append(conflicts, FieldConflict{Field: c.field, Owner: owner})
			}
		}
		if len(appliers) > 0 {
			// Another controller declares these fields: never fight it.
			it.result.Action = Conflict
			it.result.ConflictWith = dedupe(appliers)
			it.result.ConflictPaths = dedupe(paths)
			sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Field < conflicts[j].Field })
			it.result.Conflicts = conflicts
			return ""
		}
		// Only Update managers (kubectl edit, patch, client-side apply): hand-made changes,
		// which applying takes back. Respected managers' fields and the scale subresource's
		// were left out of the desired state before (leaveAlone), so they never get here.
		it.force = true
		result = it.desired.DeepCopy()
		err = r.serverApply(ctx, result, true, true)
	}
	if err != nil {
		return fmt.Sprintf("%s in namespace %q: %s", it.ref, it.ref.Namespace, apiReason(err))
	}
	if it.live == nil {
		it.result.Action = Created
		it.apply = true
		if e, ok := own.entries[it.ref.id()]; ok && e.hash == it.hash {
			// Applied with this very content, and now gone: someone deleted it.
			it.result.DriftPaths = []string{DeletedPath}
			it.result.Drift = []FieldDrift{{Path: DeletedPath}}
			it.result.Action, it.apply = Drifted, opts.SelfHeal
			if opts.SelfHeal {
				it.result.Action = Healed
			}
		}
		return ""
	}
	if len(it.adoptFrom) > 0 {
		// Taken over at apply, even with values that agree: the old tool's fields and marks go.
		it.result.Action, it.result.AdoptedFrom, it.apply = Adopted, it.adoptFrom, true
		return ""
	}
	fields := changedFields(it.live, result)
	if len(fields) == 0 {
		it.result.Action = Unchanged
		// Values agree but flotilla does not own them yet: apply once to take ownership, so
		// that a field later removed from the desired state is removed live too.
		it.apply = !ownsByApply(it.live)
		return ""
	}
	if e, ok := own.entries[it.ref.id()]; ok && e.hash == it.hash {
		nameManagers(fields, it.live)
		it.result.DriftPaths = pathsOf(fields)
		it.result.Drift = fields
		if opts.SelfHeal {
			it.result.Action = Healed
			it.apply = true
		} else {
			it.result.Action = Drifted
		}
		return ""
	}
	it.result.Action = Configured
	it.apply = true
	return ""
}

// applyItems applies the items marked for apply and returns one line per failure.
func (r *Reconciler) applyItems(ctx context.Context, items []*item, opts Options) ([]string, error) {
	var todo []*item
	for _, it := range items {
		if it.apply {
			todo = append(todo, it)
		}
	}
	err := r.forEach(ctx, todo, func(ctx context.Context, it *item) error {
		if len(it.adoptFrom) > 0 && opts.Adopt != nil {
			if err := r.takeOver(ctx, it, opts.Adopt); err != nil {
				it.failure = err.Error()
				it.result.Error = err.Error()
				return nil
			}
		}
		if err := r.serverApply(ctx, it.desired.DeepCopy(), false, it.force || opts.Force); err != nil {
			it.failure = fmt.Sprintf("%s in namespace %q: apply failed: %s", it.ref, it.ref.Namespace, apiReason(err))
			it.result.Error = "apply failed: " + apiReason(err)
		}
		return nil
	})
	var failures []string
	for _, it := range todo {
		if it.failure != "" {
			failures = append(failures, it.failure)
		}
	}
	return failures, err
}

type fieldConflict struct{ manager, field string }

var conflictManager = regexp.MustCompile(`conflict with "([^"]+)"`)

// conflictsOf reads the field managers and fields from a server-side apply conflict.
func conflictsOf(err error) []fieldConflict {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []fieldConflict
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		if m := conflictManager.FindStringSubmatch(c.Message); m != nil {
			out = append(out, fieldConflict{manager: m[1], field: c.Field})
		}
	}
	return out
}

// appliedBy reports whether manager holds fields of live through server-side apply, i.e. is
// a controller declaring them rather than a person editing them.
func appliedBy(live *unstructured.Unstructured, manager string) bool {
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// apiReason is the API server's message without client-side decoration.
func apiReason(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ApplyError lists the objects whose apply failed after validation passed.
type ApplyError struct {
	Failures []string
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("%d object(s) failed to apply:\n  %s", len(e.Failures), strings.Join(e.Failures, "\n  "))
}
