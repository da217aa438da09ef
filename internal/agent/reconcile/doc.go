// Package reconcile makes a Kubernetes cluster match a rendered set of objects: the engine the
// agent runs for every assignment, and `flotilla reconcile` runs by hand.
//
// One call to [Reconciler.Reconcile] runs these phases, in order; the names in parentheses are
// the functions that do them (reconcile.go sequences them; write runs those of steps 5 to 7):
//
//  1. Prepare (checkOptions, prepareSet, bound): refuse malformed options, normalise the
//     objects, give namespaced objects without a namespace the target namespace, refuse
//     duplicates, take the hooks out (Options.Hooks). Then bound them (checkBounds): nothing
//     in the inventory namespace, for every assignment; with Options.Project, only its
//     namespaces and the kinds it allows. One object out of bounds fails the set
//     (BoundsError) before any request. From here on, a project's ServiceAccount is
//     impersonated for every request about the objects (reads, dry-runs, applies, health,
//     prunes), so the API server's RBAC judges them; inventories are always read and written
//     as the caller's own identity.
//  2. Look (readLedger, look): read the assignment's inventory and every other assignment's
//     (ConfigMaps in the flotilla-system namespace), and the live objects with one LIST per
//     kind and namespace (a GET each where a group holds only a few objects). Fields flotilla
//     leaves alone take their live values in the desired state of existing objects: the paths
//     of matching Options.Ignore rules, and the values written by Options.RespectManagers or
//     through the scale subresource (an HPA). They are set at creation and never taken back
//     (ignore.go).
//  3. Decide (planChecks, validate), without a request, which objects are unchanged: those
//     whose desired content is the one recorded in the inventory at the last apply, whose
//     fields flotilla owns by server-side apply, and whose live values still equal the
//     desired ones. Everything else is validated with a server-side dry-run, all of it before
//     anything is written: if the API server rejects any object, nothing is applied and the
//     error names each rejected object.
//  4. Classify (planChecks, validate) what the dry-runs show: a new object (created), a new
//     desired content (configured), a live object changed by hand while the desired content
//     stayed the same (drift: healed with SelfHeal, else only reported), or fields another
//     server-side-apply manager owns, or an object another assignment's inventory holds (a
//     conflict: reported and left alone unless Force).
//  5. Apply (recordPending, applyDefinitions, validateDeferred, applyRest) in stages with
//     server-side apply and field manager "flotilla": CRDs, namespaces and cluster-wide RBAC
//     first, CRDs waited for until Established, then the objects that needed them validated,
//     the pre-install or pre-upgrade hooks run, and the rest applied, with bounded
//     concurrency; when every apply succeeded, the storage of an adopted Helm release is
//     deleted (finishAdoption). The inventory is written before the first apply (old and new
//     objects) and after pruning (new objects only), so an agent that dies half-way never
//     orphans an object.
//  6. Prune (prune), with Prune on, the inventory's objects that left the set, except those
//     annotated flotilla.dev/prune: disabled. Nothing outside the inventory is ever deleted.
//  7. Record and wait (recordApplied, waitReady, runPostHooks): write the inventory of what is
//     now applied; with Wait on, wait until every object is Current or Failed by kstatus, or
//     the timeout; then run the post-install or post-upgrade hooks.
//
// Unchanged input costs one LIST of the inventories plus one LIST per kind and namespace: no
// dry-run and no write.
package reconcile
