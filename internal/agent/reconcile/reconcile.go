package reconcile

import (
	"context"
	"errors"
	"fmt"

	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcile sequences the phases of one reconcile (see the package documentation). Each
// phase returns what the next ones need; nothing is written before write, and a failure
// before validate leaves res.Objects empty.
func (r *Reconciler) reconcile(ctx context.Context, objects []*unstructured.Unstructured, opts Options, res *Result) error {
	rules, err := checkOptions(opts)
	if err != nil {
		return err
	}
	set, err := r.prepareSet(objects, rules, opts)
	if err != nil {
		return err
	}
	if err := r.bound(set, opts); err != nil {
		return err
	}
	// From here on objects are read and written as the project's ServiceAccount, if it names
	// one; inventories stay the agent's (r.agent).
	sa := serviceAccountOf(opts.Project)
	if r, err = r.as(sa); err != nil {
		return err
	}
	led, err := r.readLedger(ctx, set.hooks, sa, opts)
	if err != nil {
		return err
	}
	if err := r.look(ctx, set, led, opts); err != nil {
		return err
	}
	p := planChecks(set.items, led, opts)
	if err := r.validate(ctx, p.check, opts, led.own); err != nil {
		res.Objects = rejectedResults(p.check)
		return err
	}
	defer func() { res.Objects = append(resultsOf(set.items), res.Objects...) }()
	if opts.DryRun {
		res.Objects = r.dryRunRest(ctx, set, p, led, opts)
		return nil
	}
	return r.write(ctx, set, p, led, opts, res)
}

// write carries out the plan once every object it could check passed: stage 0, then stage 1,
// prune, the inventory, the wait and the post hooks, in that order. It sets prune's results,
// HelmStorageDeleted and Ready in res, as far as it got; reconcile adds the items' results.
func (r *Reconciler) write(ctx context.Context, set *desiredSet, p plan, led *ledger, opts Options, res *Result) error {
	// Record every object about to be applied before applying it, so that an agent that dies
	// half-way leaves nothing the inventory does not know about. Only validated objects are
	// recorded: those the server could not check yet (in a namespace or of a kind this set
	// creates) are recorded once stage 0 exists and they pass.
	if err := r.recordPending(ctx, led, p.check); err != nil {
		return err
	}
	stage0, stage1 := splitStages(set.items)
	failures, err := r.applyDefinitions(ctx, stage0, opts)
	if err != nil {
		return err
	}
	if err := r.validateDeferred(ctx, p.later, set.ignore, opts, led.own); err != nil {
		return err // the deferred results carry the rejected objects with the rest
	}
	if err := r.recordPending(ctx, led, p.later); err != nil {
		return err
	}
	f, err := r.applyRest(ctx, stage1, set.hooks, opts)
	if err != nil {
		return err
	}
	failures = append(failures, f...)
	if len(failures) == 0 {
		if res.HelmStorageDeleted, err = r.finishAdoption(ctx, set.items, opts); err != nil {
			return err
		}
	}
	pruned, f, unpruned := r.prune(ctx, led.own, withHooks(set.items, set.hooks), opts, false)
	res.Objects = pruned
	failures = append(failures, f...)
	if err := r.recordApplied(ctx, led, set.items, unpruned); err != nil {
		return err
	}
	if len(failures) > 0 {
		return &ApplyError{Failures: failures}
	}
	if res.Ready, err = r.waitReady(ctx, set.items, opts); err != nil {
		return err
	}
	return r.runPostHooks(ctx, set.hooks, opts)
}

// checkOptions refuses malformed options before any object is looked at, and returns the
// parsed ignore rules.
func checkOptions(opts Options) ([]ignoreRule, error) {
	if opts.Name == "" {
		return nil, errors.New("an assignment name is required: it names the inventory")
	}
	rules, err := parseIgnoreRules(opts.Ignore)
	if err == nil {
		err = checkRespectManagers(opts.RespectManagers)
	}
	if err == nil {
		err = checkAdopt(opts.Adopt)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; nothing applied", err)
	}
	return rules, nil
}

// desiredSet is the input of one reconcile, prepared: the objects in apply order and the hooks.
type desiredSet struct {
	items []*item
	// hooks are applied in their phases, never compared, reported as drift or inventoried.
	hooks *hookSet
	// ignore are Options.Ignore, parsed.
	ignore []ignoreRule
}

// prepareSet turns the objects into items (prepare) and takes the hooks out of them.
func (r *Reconciler) prepareSet(objects []*unstructured.Unstructured, ignore []ignoreRule, opts Options) (*desiredSet, error) {
	objects, nsRef := withTargetNamespace(objects, opts)
	if opts.Hooks {
		objects = dropInapplicableHooks(objects)
	}
	items, err := r.prepare(objects, opts)
	if err != nil {
		return nil, err
	}
	items, hooks := splitHooks(items, opts)
	for _, it := range items {
		it.untracked = nsRef != nil && it.ref == *nsRef
	}
	return &desiredSet{items: items, hooks: hooks, ignore: ignore}, nil
}

// bound refuses the whole set, before any request, if one object (hooks included) or the
// Helm storage that adoption deletes lies outside the assignment's bounds.
func (r *Reconciler) bound(set *desiredSet, opts Options) error {
	if err := checkBounds(withHooks(set.items, set.hooks), opts.Project, r.cfg.InventoryNamespace, r.cfg.AgentNamespace); err != nil {
		return err
	}
	return checkAdoptBounds(opts, r.cfg.InventoryNamespace)
}

// ledger is the assignment's inventory as this reconcile found it, and what it has written of
// it since.
type ledger struct {
	// own is the inventory as found: a new, empty one when the assignment had none.
	own *inventory
	// stored: a ConfigMap holds the assignment's inventory, own or one written since.
	stored bool
	// account applies the objects; every inventory written names it.
	account *ServiceAccount
	// claimedBy maps the id of every object another assignment's inventory holds to that
	// assignment.
	claimedBy map[string]string
	// pending is own with the objects recorded before their apply (recordPending); nil until
	// the first record.
	pending *inventory
}

// readLedger reads every inventory, and from the assignment's own whether its hooks run.
func (r *Reconciler) readLedger(ctx context.Context, hooks *hookSet, sa *ServiceAccount, opts Options) (*ledger, error) {
	invs, err := r.loadInventories(ctx)
	if err != nil {
		return nil, err
	}
	own, err := invs.of(opts.Name)
	if err != nil {
		return nil, err
	}
	led := &ledger{own: own, stored: own != nil, account: sa, claimedBy: map[string]string{}}
	if !led.stored {
		led.own = newInventory(opts.Name)
		led.own.serviceAccount = sa
	}
	for name, inv := range invs.readable {
		if name != opts.Name {
			for id := range inv.entries {
				led.claimedBy[id] = name
			}
		}
	}
	if err := r.decideHooks(ctx, hooks, led.own, led.stored, led.claimedBy, opts); err != nil {
		return nil, err
	}
	return led, nil
}

// look reads the live objects and settles, before anything is compared, what the live state
// decides: which namespaces exist, what is adopted, which fields keep their live values.
func (r *Reconciler) look(ctx context.Context, set *desiredSet, led *ledger, opts Options) error {
	look := set.items
	if opts.SkipUnchanged && opts.Adopt == nil {
		look = skipUnchanged(set.items, led.own, led.claimedBy)
	}
	if err := r.lookup(ctx, look); err != nil {
		// Often an RBAC denial of the project's ServiceAccount: say that it cost nothing.
		return fmt.Errorf("%w; nothing applied", err)
	}
	undeferExistingNamespaces(set.items)
	// Before anything is written: refuse while the tool adopted from still writes.
	if err := markAdoptions(set.items, opts.Adopt, r.now()); err != nil {
		return err
	}
	// Fields flotilla leaves alone take their live values before anything is compared.
	leaveAlone(set.items, set.ignore, opts.RespectManagers)
	return nil
}

// plan is which items need the API server's judgement, and when.
type plan struct {
	// check are validated with a dry-run before anything is written.
	check []*item
	// later can only be validated once stage 0 exists: in a namespace or of a kind this set
	// creates.
	later []*item
}

// planChecks decides, without a request, what is unchanged or a conflict, and plans the
// dry-runs of everything else.
func planChecks(items []*item, led *ledger, opts Options) plan {
	var p plan
	for _, it := range items {
		if it.skipped {
			continue // Unchanged: applied with this content, and not read (skipUnchanged)
		}
		if other, ok := led.claimedBy[it.ref.id()]; ok && !opts.Force && !it.untracked {
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
		if e, ok := led.own.entries[it.ref.id()]; ok && it.live != nil && e.hash == it.hash &&
			ownsByApply(it.live) && coveredBy(it.desired.Object, it.live.Object, true) && len(it.adoptFrom) == 0 {
			it.result.Action = Unchanged
			continue
		}
		if it.deferred() {
			p.later = append(p.later, it)
			continue
		}
		p.check = append(p.check, it)
	}
	return p
}

// dryRunRest finishes a dry run once the dry-runs passed: it returns what prune would do.
func (r *Reconciler) dryRunRest(ctx context.Context, set *desiredSet, p plan, led *ledger, opts Options) []ObjectResult {
	for _, it := range p.later {
		it.result.Action = Created // cannot be validated before its namespace or CRD exists
	}
	pruned, _, _ := r.prune(ctx, led.own, withHooks(set.items, set.hooks), opts, true)
	return pruned
}

// recordPending writes the inventory with the items about to be applied added as "pending",
// unless that would change nothing in the cluster.
func (r *Reconciler) recordPending(ctx context.Context, led *ledger, items []*item) error {
	if led.pending == nil {
		led.pending = newInventory(led.own.name)
		led.pending.serviceAccount = led.account
		for id, e := range led.own.entries {
			led.pending.entries[id] = e
		}
	}
	pending := led.pending
	before := pending.encode()
	for _, it := range items {
		if _, ok := pending.entries[it.ref.id()]; it.apply && !ok && !it.untracked {
			pending.entries[it.ref.id()] = inventoryEntry{ref: it.ref, hash: "pending"}
		}
	}
	if pending.encode() == before && sameAccount(pending.serviceAccount, led.own.serviceAccount) && (led.stored || len(pending.entries) == 0) {
		return nil
	}
	if err := r.saveInventory(ctx, pending); err != nil {
		return err
	}
	led.stored = true
	return nil
}

// splitStages separates stage 0 (CRDs, namespaces, cluster RBAC) from the rest, in order.
func splitStages(items []*item) (stage0, stage1 []*item) {
	for _, it := range items {
		if it.stage == 0 {
			stage0 = append(stage0, it)
		} else {
			stage1 = append(stage1, it)
		}
	}
	return stage0, stage1
}

// applyDefinitions applies stage 0 and waits until its CRDs are Established, since their
// kinds cannot be used before. It returns one line per failed apply.
func (r *Reconciler) applyDefinitions(ctx context.Context, stage0 []*item, opts Options) ([]string, error) {
	failures, err := r.applyItems(ctx, stage0, opts)
	if err != nil {
		return nil, err
	}
	if err := r.waitEstablished(ctx, stage0, opts); err != nil {
		return nil, err
	}
	return failures, nil
}

// validateDeferred reads and dry-runs the objects in namespaces or of kinds this set just
// created, still before any of stage 1 is written.
func (r *Reconciler) validateDeferred(ctx context.Context, later []*item, ignore []ignoreRule, opts Options, own *inventory) error {
	if err := r.lookup(ctx, later); err != nil {
		return err
	}
	leaveAlone(later, ignore, opts.RespectManagers)
	if err := r.validate(ctx, later, opts, own); err != nil {
		var invalid *InvalidError
		if errors.As(err, &invalid) {
			invalid.AfterStageZero = true
		}
		return err
	}
	return nil
}

// applyRest runs the pre-install or pre-upgrade hooks, after the definitions and namespaces
// they may need, then applies stage 1. It returns one line per failed apply.
func (r *Reconciler) applyRest(ctx context.Context, stage1 []*item, hooks *hookSet, opts Options) ([]string, error) {
	if err := r.runHooks(ctx, hooks, true, opts); err != nil {
		return nil, err
	}
	return r.applyItems(ctx, stage1, opts)
}

// recordApplied writes the inventory of what is now applied: every item but the untracked
// namespace and conflicts, and the objects prune failed to delete, which it tries again next
// time. A failed apply is recorded as "failed" so that it is never taken for unchanged.
func (r *Reconciler) recordApplied(ctx context.Context, led *ledger, items []*item, unpruned []ObjectRef) error {
	final := newInventory(led.own.name)
	final.serviceAccount = led.account
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
		final.entries[ref.id()] = led.own.entries[ref.id()]
	}
	if final.equal(led.own) && led.stored {
		return nil
	}
	return r.saveInventory(ctx, final)
}

// waitReady waits, with Options.Wait, until the objects are healthy. It returns nil without
// Wait, else whether all became ready, and an error if they did not.
func (r *Reconciler) waitReady(ctx context.Context, items []*item, opts Options) (*bool, error) {
	if !opts.Wait {
		return nil, nil
	}
	ready, err := r.waitHealthy(ctx, items, opts)
	if err != nil {
		return nil, err
	}
	if !ready {
		return &ready, errors.New("not every object became ready; see health")
	}
	return &ready, nil
}

// runPostHooks runs the post-install or post-upgrade hooks, then notes on the inventory that
// this set's hooks ran.
func (r *Reconciler) runPostHooks(ctx context.Context, hooks *hookSet, opts Options) error {
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
