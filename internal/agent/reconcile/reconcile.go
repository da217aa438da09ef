package reconcile

import (
	"context"
	"errors"
	"fmt"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func (r *Reconciler) reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts Options, res *Result) error {
	if opts.Name == "" {
		return errors.New("an assignment name is required: it names the inventory")
	}
	rules, err := parseIgnoreRules(opts.Ignore)
	if err == nil {
		err = checkRespectManagers(opts.RespectManagers)
	}
	if err == nil {
		err = checkAdopt(opts.Adopt)
	}
	if err != nil {
		return fmt.Errorf("%w; nothing applied", err)
	}
	objects, nsRef := withTargetNamespace(objects, opts)
	if opts.Hooks {
		objects = dropInapplicableHooks(objects)
	}
	items, err := r.prepare(objects, opts)
	if err != nil {
		return err
	}
	// Hooks are applied in their phases, never compared, reported as drift or inventoried.
	items, hooks := splitHooks(items, opts)
	for _, it := range items {
		it.untracked = nsRef != nil && it.ref == *nsRef
	}
	if err := checkBounds(withHooks(items, hooks), opts.Project, r.cfg.InventoryNamespace, r.cfg.AgentNamespace); err != nil {
		return err
	}
	if err := checkAdoptBounds(opts, r.cfg.InventoryNamespace); err != nil {
		return err
	}
	// From here on objects are read and written as the project's ServiceAccount, if it names
	// one; inventories stay the agent's (r.agent).
	sa := serviceAccountOf(opts.Project)
	if r, err = r.as(sa); err != nil {
		return err
	}

	invs, err := r.loadInventories(ctx)
	if err != nil {
		return err
	}
	own, err := invs.of(opts.Name)
	if err != nil {
		return err
	}
	exists := own != nil
	if !exists {
		own = newInventory(opts.Name)
		own.serviceAccount = sa
	}
	claimedBy := map[string]string{}
	for name, inv := range invs.readable {
		if name != opts.Name {
			for id := range inv.entries {
				claimedBy[id] = name
			}
		}
	}
	if err := r.decideHooks(ctx, hooks, own, exists, claimedBy, opts); err != nil {
		return err
	}
	look := items
	if opts.SkipUnchanged && opts.Adopt == nil {
		look = skipUnchanged(items, own, claimedBy)
	}
	if err := r.lookup(ctx, look); err != nil {
		// Often an RBAC denial of the project's ServiceAccount: say that it cost nothing.
		return fmt.Errorf("%w; nothing applied", err)
	}
	undeferExistingNamespaces(items)
	// Before anything is written: refuse while the tool adopted from still writes.
	if err := markAdoptions(items, opts.Adopt, r.now()); err != nil {
		return err
	}
	// Fields flotilla leaves alone take their live values before anything is compared.
	leaveAlone(items, rules, opts.RespectManagers)

	// Decide what is unchanged without a request; validate everything else with a dry-run
	// before anything is written.
	var check, later []*item
	for _, it := range items {
		if it.skipped {
			continue // Unchanged: applied with this content, and not read (skipUnchanged)
		}
		if other, ok := claimedBy[it.ref.id()]; ok && !opts.Force && !it.untracked {
			it.result.Action = Conflict
			owner := fmt.Sprintf("assignment %q", other)
			it.result.ConflictWith = []string{owner}
			it.result.Conflicts = []FieldConflict{{Owner: owner}}
			continue
		}
		if it.untracked && it.live != nil {
			// The target namespace exists: CreateNamespace has nothing to do.
			it.result.Action = Unchanged
			continue
		}
		if e, ok := own.entries[it.ref.id()]; ok && it.live != nil && e.hash == it.hash &&
			ownsByApply(it.live) && coveredBy(it.desired.Object, it.live.Object, true) && len(it.adoptFrom) == 0 {
			it.result.Action = Unchanged
			continue
		}
		if it.deferred() {
			later = append(later, it)
			continue
		}
		check = append(check, it)
	}
	if err := r.validate(ctx, check, opts, own); err != nil {
		res.Objects = rejectedResults(check)
		return err
	}
	defer func() { res.Objects = append(resultsOf(items), res.Objects...) }()

	if opts.DryRun {
		for _, it := range later {
			it.result.Action = Created // cannot be validated before its namespace or CRD exists
		}
		res.Objects, _, _ = r.prune(ctx, own, withHooks(items, hooks), opts, true)
		return nil
	}

	// Record every object about to be applied before applying it, so that an agent that dies
	// half-way leaves nothing the inventory does not know about. Only validated objects are
	// recorded: those the server could not check yet (in a namespace or of a kind this set
	// creates) are recorded once stage 0 exists and they pass.
	pending := newInventory(opts.Name)
	pending.serviceAccount = sa
	for id, e := range own.entries {
		pending.entries[id] = e
	}
	recordPending := func(items []*item) error {
		before := pending.encode()
		for _, it := range items {
			if _, ok := pending.entries[it.ref.id()]; it.apply && !ok && !it.untracked {
				pending.entries[it.ref.id()] = inventoryEntry{ref: it.ref, hash: "pending"}
			}
		}
		if pending.encode() == before && sameAccount(pending.serviceAccount, own.serviceAccount) && (exists || len(pending.entries) == 0) {
			return nil
		}
		if err := r.saveInventory(ctx, pending); err != nil {
			return err
		}
		exists = true
		return nil
	}
	if err := recordPending(check); err != nil {
		return err
	}

	// Stage 0: CRDs, namespaces, cluster RBAC; CRDs must be Established before their kinds
	// can be used.
	var stage0, stage1 []*item
	for _, it := range items {
		if it.stage == 0 {
			stage0 = append(stage0, it)
		} else {
			stage1 = append(stage1, it)
		}
	}
	var failures []string
	f, err := r.applyItems(ctx, stage0, opts)
	if err != nil {
		return err
	}
	failures = append(failures, f...)
	if err := r.waitEstablished(ctx, stage0, opts); err != nil {
		return err
	}
	// Objects in namespaces or of kinds this set just created: validate them now, still before
	// any of stage 1 is written.
	if err := r.lookup(ctx, later); err != nil {
		return err
	}
	leaveAlone(later, rules, opts.RespectManagers)
	if err := r.validate(ctx, later, opts, own); err != nil {
		var invalid *InvalidError
		if errors.As(err, &invalid) {
			invalid.AfterStageZero = true
		}
		return err // the deferred results carry the rejected objects with the rest
	}
	if err := recordPending(later); err != nil {
		return err
	}
	// Pre-install and pre-upgrade hooks, after the definitions and namespaces they may need.
	if err := r.runHooks(ctx, hooks, true, opts); err != nil {
		return err
	}
	f, err = r.applyItems(ctx, stage1, opts)
	if err != nil {
		return err
	}
	failures = append(failures, f...)

	if len(failures) == 0 {
		if res.HelmStorageDeleted, err = r.finishAdoption(ctx, items, opts); err != nil {
			return err
		}
	}

	pruned, f, unpruned := r.prune(ctx, own, withHooks(items, hooks), opts, false)
	res.Objects = pruned
	failures = append(failures, f...)

	final := newInventory(opts.Name)
	final.serviceAccount = sa
	for _, it := range items {
		if it.untracked || it.result.Action == Conflict {
			continue
		}
		hash := it.hash
		if it.failure != "" {
			hash = "failed" // applied content unknown: never taken for unchanged
		}
		final.entries[it.ref.id()] = inventoryEntry{ref: it.ref, hash: hash, drifted: it.result.Action == Drifted}
	}
	for _, ref := range unpruned {
		final.entries[ref.id()] = own.entries[ref.id()]
	}
	if !final.equal(own) || !exists {
		if err := r.saveInventory(ctx, final); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return &ApplyError{Failures: failures}
	}

	if opts.Wait {
		ready, err := r.waitHealthy(ctx, items, opts)
		if err != nil {
			return err
		}
		res.Ready = &ready
		if !ready {
			return errors.New("not every object became ready; see health")
		}
	}
	if err := r.runHooks(ctx, hooks, false, opts); err != nil {
		return err
	}
	return r.recordHooks(ctx, hooks, opts)
}

// validate dry-runs the items and fails with every rejected object if any is rejected.
func (r *Reconciler) validate(ctx context.Context, items []*item, opts Options, own *inventory) error {
	problems := make([]string, len(items))
	err := r.parallel(ctx, len(items), func(ctx context.Context, i int) error {
		problems[i] = r.check(ctx, items[i], opts, own)
		return nil
	})
	if err != nil {
		return err
	}
	var rejected []string
	for i, p := range problems {
		if p != "" {
			rejected = append(rejected, p)
			items[i].result.Action, items[i].result.Error = Rejected, p
		}
	}
	if len(rejected) > 0 {
		return &InvalidError{Problems: rejected}
	}
	return nil
}

// withTargetNamespace adds the target Namespace when CreateNamespace is set and the set does
// not declare it, and returns its reference.
func withTargetNamespace(objects []*unstructured.Unstructured, opts Options) ([]*unstructured.Unstructured, *ObjectRef) {
	if !opts.CreateNamespace {
		return objects, nil
	}
	for _, o := range objects {
		if ssautils.IsNamespace(o) && o.GetName() == opts.Namespace {
			return objects, nil
		}
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(opts.Namespace)
	ref := refOf(ns)
	return append([]*unstructured.Unstructured{ns}, objects...), &ref
}

// undeferExistingNamespaces: an object was deferred because the set declares its namespace;
// if that namespace already exists it can be validated up front like the rest.
func undeferExistingNamespaces(items []*item) {
	existing := map[string]bool{}
	for _, it := range items {
		// A skipped namespace was applied with this content; were it deleted since, the drift
		// check re-creates it.
		if ssautils.IsNamespace(it.desired) && (it.live != nil || it.skipped) {
			existing[it.ref.Name] = true
		}
	}
	for _, it := range items {
		if it.inNewNamespace && existing[it.ref.Namespace] {
			it.inNewNamespace = false
		}
	}
}

func resultsOf(items []*item) []ObjectResult {
	out := make([]ObjectResult, 0, len(items))
	for _, it := range items {
		out = append(out, it.result)
	}
	return out
}

// rejectedResults are the results of the items the dry-run refused: what a user needs to see
// per object when nothing was applied.
func rejectedResults(items []*item) []ObjectResult {
	var out []ObjectResult
	for _, it := range items {
		if it.result.Action == Rejected {
			out = append(out, it.result)
		}
	}
	return out
}

// skipUnchanged marks Unchanged, without reading them, the items whose desired content is the
// one the inventory recorded at their last apply (Options.SkipUnchanged), and returns the
// others, which are read and compared as usual. An object another inventory claims, the
// namespace CreateNamespace adds, and one left drifted by the last reconcile are always read.
func skipUnchanged(items []*item, own *inventory, claimedBy map[string]string) []*item {
	rest := make([]*item, 0, len(items))
	for _, it := range items {
		e, ok := own.entries[it.ref.id()]
		_, claimed := claimedBy[it.ref.id()]
		if ok && e.hash == it.hash && !e.drifted && !claimed && !it.untracked {
			it.skipped = true
			it.result.Action = Unchanged
			continue
		}
		rest = append(rest, it)
	}
	return rest
}
