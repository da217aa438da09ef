// Package hub is Flotilla's control plane, and this package is its wiring: it opens the
// store, CA and audit log, builds the parts below from Options and runs them on the agent
// and user listeners, and evaluates notifications. It never connects to a cluster and holds
// no cluster credentials.
//
// The parts take narrow dependencies, not the hub, so each can be tested alone:
//   - controller: reads the fleet configuration, resolves each source once per poll into a
//     content-addressed artifact, and turns releases x matching clusters into per-cluster
//     desired state with a rising generation and a tombstone for every release that leaves;
//     a failed store read changes nothing.
//   - agentapi: the agent endpoint (join, watch, report, heartbeat, artifacts; mTLS with a
//     per-cluster certificate, authorised per request), its limits and last-seen times.
//   - userapi: the user API (bearer token) that the CLI and dashboard use: clusters, join
//     tokens, labels, releases, sources, the fleet's status, skew and drift, the audit trail
//     and the dashboard's pages; its status computation is the one notifications share.
//   - replica: several hubs sharing one PostgreSQL store. Every replica serves agents and
//     users; one at a time, the holder of a lease in the store, runs the controller; changes
//     reach the other replicas' watch streams through LISTEN/NOTIFY. On SQLite a hub is the
//     only replica. docs/ha.md is the manual.
//
// Options.Clock is the one time source of all of them.
package hub
