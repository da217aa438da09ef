// Package agent is the in-cluster side of Flotilla. Its subpackages render an assignment's
// manifests and reconcile them into the cluster.
//
// An Agent runs four loops on one clock (Options.Clock): the watch, which receives the
// cluster's desired state from the hub; the reconcile loop, which applies every assignment
// when the desired state changes and again on its interval; the report loop, which sends the
// durable outbox; and heartbeats. Certificate renewal runs beside them.
//
// # Removal is explicit
//
// The agent prunes a whole release only when the desired state carries a tombstone for it
// (removeTombstoned). A desired state that drops a release the agent runs, without a
// tombstone, is refused as a whole (checkRemovals, RefusedError): the agent keeps running,
// and keeps in its state dir, the last document it accepted, prunes nothing, and reports the
// refusal in every heartbeat and in the flotilla_agent_desired_refused_generation gauge until
// it accepts a document again. Meanwhile it sends no reports on the dropped releases, which
// the hub would refuse. A document from a hub older than tombstones (no explicit_removals) is
// accepted only if it drops nothing. Inventories in the cluster that are neither assigned nor
// tombstoned are left alone.
package agent
