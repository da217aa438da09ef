// Package httpapi is what the hub's user-facing HTTP APIs share, so that they are peers
// rather than one the plumbing of the others: the [Route] each of them serves and the [Rule]
// it asks of the principal, the front door every authenticated route sits behind ([Server]:
// bearer authentication, the rule's check, the audit record of every changing call and each
// principal's rate of them), the JSON answers and error documents, and the authenticated
// actor and its scope of the fleet ([Actor], [WithRole], [ScopeOf], [VisibleCluster],
// [VisibleProjects]).
//
// The packages that serve routes (userapi: reading the fleet and managing clusters and
// tokens; opsapi: acting on a fleet in motion; bundleapi: air-gapped sites; agekeys: the
// clusters' age recipients) each return their routes as []Route, and the hub mounts them
// all on one [Server]. None of them imports another.
package httpapi
