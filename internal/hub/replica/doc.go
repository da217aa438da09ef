// Package replica lets several hubs share one PostgreSQL store: a lease in the store says
// which replica runs the controller (reads the fleet, polls sources, schedules), a fan-out over
// LISTEN/NOTIFY carries each replica's changes to the others' watch streams, artifacts packed
// by one replica are served by every replica through the store, and every replica holds the
// same CA and admin token. On a store that cannot be shared (SQLite) a hub is the only
// replica: it holds the lease for good and publishes to nobody.
//
// Nothing here holds the hub. A [Replication] takes the store, this replica's ID, a clock and
// a logger; what a change notification means for the hub (wake a watch, reschedule, adopt the
// lease holder's fleet view) comes in as [Handlers]. docs/ha.md is the manual.
package replica
