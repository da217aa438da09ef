// Package chartcheck holds the tests of the Helm chart in deploy/chart/flotilla: linted and
// rendered with the Helm SDK for the value sets users install (the hub on SQLite, the hub on
// PostgreSQL with replicas, the agent alone, both), each refusal of contradictory values, and
// every rendered object accepted by a real API server in a server-side dry-run.
package chartcheck
