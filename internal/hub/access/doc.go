// Package access says who may do what through the hub's user API: principals (a named token
// or an OIDC subject), their grants (a role in some projects or in all of them), the scope a
// principal sees of the fleet, the store of named tokens, and the verification of OIDC ID
// tokens.
//
// # Roles
//
// A grant is a role in a set of projects, or in every project when the set is empty:
//   - viewer reads everything of its projects: their releases, the clusters their
//     clusterSelectors match, the statuses, drift, skew and audit records of both;
//   - deployer is a viewer that may also act on its projects' releases (sync, pause, approve,
//     as those verbs arrive);
//   - admin may do everything, in every project: clusters, join tokens, user tokens, and the
//     fleet-wide views (the audit log's verification). An admin grant always covers every
//     project.
//
// A principal holds one grant (a token) or several (an OIDC subject in several mapped groups);
// an action is allowed when one grant allows it.
//
// # Scope
//
// Scope is what a principal sees of the fleet configuration in force. A release belongs to
// its spec.project (empty: platform); a project's clusters are those its clusterSelector
// matches (empty selector: all). The platform project, when the fleet does not define it,
// has every cluster; any other project the fleet does not define has none. A principal sees
// a release when it holds a grant in its project, and a cluster when one of the projects it
// holds a grant in has that cluster. Records and views that name neither a visible release
// nor a visible cluster (fleet-wide events, token events) are for principals whose grant
// covers every project.
//
// # Tokens
//
// A token is "flt_" and 43 characters of base64url (32 random bytes). Only its SHA-256 is
// stored, with its name, grant, creation and expiry time: the secret is shown once, when it is
// created or rotated. Tokens live in their own table (user_tokens) in the hub's store, so
// that replicas sharing a PostgreSQL store share them. The bootstrap admin token in the data
// dir's admin.token is not in that table: each hub reads its own file, and it is named
// "admin" in the audit trail.
package access
