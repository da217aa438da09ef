package httpapi

import "net/http"

// Rule is what a route asks of the principal. Every authenticated route has one: a Server
// registers routes only as Routes, and the role matrix tests walk them.
type Rule int

const (
	// RuleSignedIn: any principal (whoami).
	RuleSignedIn Rule = iota
	// RuleView: a viewer in at least one project; the handler shows only what the
	// principal's scope holds, and answers 404 for a named cluster or release outside it.
	RuleView
	// RuleViewFleet: a viewer in every project (fleet-wide views such as the audit log's
	// verification).
	RuleViewFleet
	// RuleDeployRelease: a deployer in the project of the {release} the path names (a
	// release that is not in the fleet: a deployer in every project).
	RuleDeployRelease
	// RuleDeployFleet: a deployer in every project (fleet-wide freezes, cluster suspension).
	RuleDeployFleet
	// RuleAdmin: an admin.
	RuleAdmin
)

// String is how a refusal names what the route needs ("it needs admin").
func (r Rule) String() string {
	return [...]string{"signed in", "viewer", "viewer of every project", "deployer of the release's project", "deployer of every project", "admin"}[r]
}

// Route is an authenticated /api/ route, behind its rule.
type Route struct {
	Pattern string
	Rule    Rule
	Handler http.Handler
}
