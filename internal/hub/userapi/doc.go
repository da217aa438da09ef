// Package userapi is the hub's user API: clusters and their join tokens and labels,
// releases, sources, the fleet's status, skew and drift, the audit trail, and the
// dashboard's pages and fleet document, all behind the admin bearer token.
//
// It takes its dependencies explicitly ([Deps]): the part of the store it reads and writes,
// the agents' last-seen times, the decoded desired states, the controller's view, the audit
// log, a clock, a logger, and callbacks that tell the hub a cluster was added, relabelled or
// removed. It never holds the hub. The status computation it serves ([API.FleetStatus]) is
// the one the hub's notifications share.
package userapi
