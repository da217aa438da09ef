package userapi

import (
	"context"
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hubapi"
)

// dashboardPages serves the dashboard's static pages. They hold no fleet data: the page
// reads everything from /api/ with the admin token.
func (api *API) dashboardPages() http.Handler {
	pages, err := dashboard.Pages()
	if err != nil {
		// Only a broken build gets here (the pages are embedded); say so on every request.
		api.d.Logger.Error("dashboard not available", "error", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	return pages
}

// The only API route the dashboard alone uses (behind the same admin token) is
// GET /api/v1/dashboard/fleet: the compact fleet document (dashboard.Fleet) with an ETag,
// computed on demand and shared by every open dashboard; computed again after a change
// (DashboardChanged) or dashboard.DefaultMaxAge, at a pace bounded by its cost. Everything
// else the page shows comes from the user API itself (clusters/{name}, drift, audit).

// DashboardChanged tells the dashboard that the fleet's status changed (a report ingested, a
// desired state written), so open dashboards show it at their next poll. It costs an atomic
// store.
func (api *API) DashboardChanged() { api.dash.Changed() }

// dashboardFleetDoc serves the fleet document: the shared snapshot to a principal that sees
// the whole fleet, a document computed for its scope to any other.
func (api *API) dashboardFleetDoc(w http.ResponseWriter, r *http.Request) {
	if scopeOf(r.Context()).All() {
		api.dash.ServeHTTP(w, r)
		return
	}
	doc, err := api.dashboardFleet(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, doc)
}

// dashboardFleet is the fleet document of ctx's scope.
func (api *API) dashboardFleet(ctx context.Context) (dashboard.Fleet, error) {
	st, err := api.statusView(ctx, hubapi.StatusFilter{})
	if err != nil {
		return dashboard.Fleet{}, err
	}
	stored, err := api.d.Store.ListClusters(ctx)
	if err != nil {
		return dashboard.Fleet{}, err
	}
	clusters := make([]dashboard.Cluster, 0, len(stored))
	for _, c := range stored {
		if !visibleCluster(ctx, c) {
			continue
		}
		seen, _ := api.d.Seen.Get(c)
		clusters = append(clusters, dashboard.Cluster{Name: c.Name, Labels: c.Labels, Seen: !seen.IsZero(), Reachable: api.reachable(seen)})
	}
	return dashboard.Build(st, api.releaseNames(ctx), clusters), nil
}
