// Package userapi is the hub's user API for reading the fleet and managing who is in it:
// clusters and their join tokens, labels and certificates, the named user tokens and
// sign-in, releases, sources, the fleet's status, skew and drift, the audit trail, and the
// dashboard's pages and fleet document. Acting on a fleet in motion (rollouts, freezes,
// suspensions, sync, plans, webhooks) is opsapi's; air-gapped bundles bundleapi's; the
// clusters' age recipients agekeys'. They are peers: each returns its routes as
// []httpapi.Route, the hub serves them all on one httpapi.Server (bearer authentication,
// rules, audit of changing calls, rate limits), and none imports another.
//
// It takes its dependencies explicitly ([Deps]): the part of the store it reads and writes,
// the agents' last-seen times, the decoded desired states, the controller's view, the audit
// log, a clock, a logger, and callbacks that tell the hub a cluster was added, relabelled or
// removed. It never holds the hub. The status computation it serves ([API.FleetStatus]) is
// the one the hub's notifications share.
package userapi
