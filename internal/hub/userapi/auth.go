package userapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Routes are the user API's authenticated routes, each with the rule it asks of the
// principal, for an httpapi.Server to serve under /api/ (the hub mounts its peers' beside
// them); the role matrix test walks them.
func (api *API) Routes() []httpapi.Route {
	f := func(h http.HandlerFunc) http.Handler { return h }
	return []httpapi.Route{
		{Pattern: "GET /api/v1/whoami", Rule: httpapi.RuleSignedIn, Handler: f(api.whoami)},
		{Pattern: "POST /api/v1/clusters", Rule: httpapi.RuleAdmin, Handler: f(api.addCluster)},
		{Pattern: "GET /api/v1/clusters", Rule: httpapi.RuleView, Handler: f(api.listClusters)},
		{Pattern: "GET /api/v1/clusters/{name}", Rule: httpapi.RuleView, Handler: f(api.getCluster)},
		{Pattern: "GET /api/v1/clusters/{name}/releases/{release}", Rule: httpapi.RuleView, Handler: api.inScope(f(api.assignmentDetail))},
		{Pattern: "PATCH /api/v1/clusters/{name}/labels", Rule: httpapi.RuleAdmin, Handler: f(api.labelCluster)},
		{Pattern: "DELETE /api/v1/clusters/{name}", Rule: httpapi.RuleAdmin, Handler: f(api.removeCluster)},
		{Pattern: "POST /api/v1/clusters/{name}/token", Rule: httpapi.RuleAdmin, Handler: f(api.newToken)},
		{Pattern: "POST /api/v1/clusters/{name}/rotate", Rule: httpapi.RuleAdmin, Handler: f(api.rotateCluster)},
		{Pattern: "GET /api/v1/releases", Rule: httpapi.RuleView, Handler: f(api.listReleases)},
		{Pattern: "GET /api/v1/sources", Rule: httpapi.RuleView, Handler: f(api.listSources)},
		{Pattern: "GET /api/v1/status", Rule: httpapi.RuleView, Handler: f(api.status)},
		{Pattern: "GET /api/v1/skew", Rule: httpapi.RuleView, Handler: f(api.skew)},
		{Pattern: "GET /api/v1/drift", Rule: httpapi.RuleView, Handler: f(api.drift)},
		{Pattern: "GET /api/v1/audit", Rule: httpapi.RuleView, Handler: f(api.listAudit)},
		{Pattern: "GET /api/v1/audit/verify", Rule: httpapi.RuleViewFleet, Handler: f(api.verifyAudit)},
		{Pattern: "GET /api/v1/dashboard/fleet", Rule: httpapi.RuleView, Handler: f(api.dashboardFleetDoc)},
		{Pattern: "GET /api/v1/tokens", Rule: httpapi.RuleAdmin, Handler: f(api.listUserTokens)},
		{Pattern: "POST /api/v1/tokens", Rule: httpapi.RuleAdmin, Handler: f(api.createUserToken)},
		{Pattern: "DELETE /api/v1/tokens/{name}", Rule: httpapi.RuleAdmin, Handler: f(api.revokeUserToken)},
		{Pattern: "POST /api/v1/tokens/{name}/rotate", Rule: httpapi.RuleAdmin, Handler: f(api.rotateUserToken)},
	}
}

// inScope answers 404, as for an unknown one, for a {name} cluster or {release} outside the
// principal's scope.
func (api *API) inScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := httpapi.ScopeOf(r.Context())
		if rel := r.PathValue("release"); rel != "" && !s.Release(rel) {
			httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("release %q is not on cluster %q", rel, r.PathValue("name")))
			return
		}
		if name := r.PathValue("name"); name != "" && !s.All() {
			c, err := api.d.Store.GetCluster(r.Context(), name)
			if err == nil && !s.Cluster(c.Labels) {
				err = store.ErrNotFound
			}
			if err != nil {
				writeStoreError(w, err, name)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// record writes e as done by ctx's principal: its actor, and the role it used in the
// detail.
func (api *API) record(ctx context.Context, e audit.Event) {
	api.d.Record(ctx, httpapi.WithRole(ctx, e))
}
