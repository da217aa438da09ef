// Package hub is Flotilla's control plane. It reads the fleet configuration, resolves each
// source once per poll and packs it into a content-addressed artifact, turns releases x
// matching clusters into per-cluster desired state with a rising generation, and serves two
// HTTPS endpoints: the agent endpoint (join, watch, report, heartbeat, artifacts; mTLS with a
// per-cluster certificate, authorised per request) and the user API (bearer token) that the
// CLI and dashboard use. It never connects to a cluster and holds no cluster credentials.
//
// Several hubs may share one PostgreSQL store as replicas (replica.go): every replica serves
// agents and users, one at a time (the holder of a lease in the store, lease.go) reads the
// fleet, polls and schedules, and changes reach the other replicas' watch streams through
// LISTEN/NOTIFY (fanout.go). On SQLite a hub is the only replica. docs/ha.md is the manual.
package hub
