// Package controller keeps every cluster's desired state up to date on the hub replica that
// holds the controller lease: it re-reads the fleet configuration, polls each source on its
// interval (once per poll, however many clusters use it), packs new revisions into artifacts,
// and reschedules when anything changed.
//
// # Never removing by accident
//
// An assignment that leaves a cluster's desired state makes that cluster's agent prune what
// the release applied, so the controller is built to fail safe:
//
//   - It keeps its last plan (every cluster's document) in memory, loaded once from the store
//     when it takes the lease, and compares against that. Until the load succeeds it
//     schedules nothing.
//   - A reschedule that cannot read everything it needs (the cluster list, a new cluster's
//     stored document) changes nothing and logs why; it is tried again shortly.
//   - A document that could not be stored keeps its cluster's last plan, and is tried again.
//   - Without a valid fleet configuration nothing is scheduled.
//   - A release leaves a cluster only with a tombstone naming why (the release was deleted, or
//     no longer selects the cluster); see package schedule.
//
// # Tenant fleet repositories
//
// A Project may name its team's own fleet repository. The controller reads each one on the
// main fleet's interval, checks it against the Project (v1alpha1.ParseTenant), and schedules
// the main fleet with every tenant's configuration in force added. A rejected commit of one
// tenant leaves that tenant's last valid configuration in force and touches nothing else; the
// error is a scheduling problem naming the file at the commit. While a tenant's repository
// has no configuration in force in this controller (it could not be read since the lease was
// taken), the clusters keep that project's assignments: nothing is pruned for it.
//
// The controller depends on narrow interfaces ([Store], [Poller], [Artifacts], [Lease]) and
// a clock, so that each fault can be tested with a fake store and no hub.
package controller
