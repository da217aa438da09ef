package userapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Rule is what a route another package serves (Deps.Extra) asks of the principal.
type Rule int

const (
	// RuleView: a viewer in at least one project.
	RuleView Rule = iota
	// RuleDeployRelease: a deployer in the project of the {release} the path names (a
	// release that is not in the fleet: a deployer in every project).
	RuleDeployRelease
	// RuleDeployFleet: a deployer in every project (fleet-wide freezes, cluster suspension).
	RuleDeployFleet
	// RuleAdmin: an admin.
	RuleAdmin
)

func (r Rule) String() string {
	return [...]string{"viewer", "deployer of the release's project", "deployer of every project", "admin"}[r]
}

// Route is an authenticated /api/ route served by another package, behind its rule.
type Route struct {
	Pattern string
	Rule    Rule
	Handler http.Handler
}

// extraRoutes wraps Deps.Extra in the user API's own rules.
func (api *API) extraRoutes() []route {
	out := make([]route, 0, len(api.d.Extra))
	for _, rt := range api.d.Extra {
		switch rt.Rule {
		case RuleView:
			out = append(out, route{rt.Pattern, ruleView, rt.Handler})
		case RuleAdmin:
			out = append(out, route{rt.Pattern, ruleAdmin, rt.Handler})
		default:
			out = append(out, route{rt.Pattern, ruleSignedIn, api.deployer(rt)})
		}
	}
	return out
}

// deployer answers 403 unless the principal is a deployer where rt says.
func (api *API) deployer(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := access.FromContext(r.Context())
		ok := p.CanEverywhere(access.Deployer)
		if !ok && rt.Rule == RuleDeployRelease {
			if project, found := api.projectOf(r.PathValue("release")); found {
				ok = p.Can(access.Deployer, project)
			}
		}
		if !ok {
			writeError(w, http.StatusForbidden, fmt.Errorf("%s (%s) may not %s %s: it needs %s", p.Actor, p.Role(), r.Method, r.URL.Path, rt.Rule))
			return
		}
		rt.Handler.ServeHTTP(w, r)
	})
}

// projectOf returns the project of the named release in the fleet in force.
func (api *API) projectOf(release string) (string, bool) {
	fleet := api.d.View().Fleet
	if fleet == nil || release == "" {
		return "", false
	}
	for _, r := range fleet.Releases {
		if r.Metadata.Name == release {
			return r.Spec.Project, true
		}
	}
	return "", false
}

// Actor is who the audit trail names for ctx's request.
func Actor(ctx context.Context) string { return actor(ctx) }

// WithRole adds the role ctx's principal acted with to e's detail and names its actor, as
// the user API's own audit records do.
func WithRole(ctx context.Context, e audit.Event) audit.Event {
	p, _ := access.FromContext(ctx)
	e.Actor = actor(ctx)
	detail := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail["role"] = p.Role()
	e.Detail = detail
	return e
}

// WriteJSON and WriteError answer as every user API route does.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// VisibleCluster reports whether ctx's principal may see cluster c (its scope).
func VisibleCluster(ctx context.Context, c store.Cluster) bool { return visibleCluster(ctx, c) }

// VisibleProjects keeps, of byProject, the entries of the projects ctx's principal may see:
// which other teams deliver to a cluster is theirs to know.
func VisibleProjects[V any](ctx context.Context, byProject map[string]V) map[string]V {
	s := scopeOf(ctx)
	var out map[string]V
	for p, v := range byProject {
		if s.Project(p) {
			if out == nil {
				out = make(map[string]V, len(byProject))
			}
			out[p] = v
		}
	}
	return out
}

// WriteError writes err as the user API's error document.
func WriteError(w http.ResponseWriter, status int, err error) { writeError(w, status, err) }
