package userapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
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

// The only API route the dashboard alone uses (behind the same tokens) is
// GET /api/v1/dashboard/fleet: the compact fleet document (dashboard.Fleet) with an ETag,
// computed on demand and shared by every open dashboard; computed again after a change
// (DashboardChanged) or dashboard.DefaultMaxAge, at a pace bounded by its cost. Everything
// else the page shows comes from the user API itself (clusters/{name}, drift, audit).

// DashboardChanged tells the dashboard that the fleet's status changed (a report ingested, a
// desired state written), so open dashboards show it at their next poll. It costs an atomic
// store per snapshot: the whole fleet's and one per scoped set of grants (at most 64).
func (api *API) DashboardChanged() {
	api.dash.Changed()
	api.scoped.mu.Lock()
	defer api.scoped.mu.Unlock()
	for _, s := range api.scoped.docs {
		s.Changed()
	}
}

// dashboardFleetDoc serves the fleet document: the shared snapshot to a principal that sees
// the whole fleet, and to any other the snapshot of its grants (shared by every principal
// with the same grants: two viewers of team-a read one document, with its ETag).
func (api *API) dashboardFleetDoc(w http.ResponseWriter, r *http.Request) {
	if httpapi.ScopeOf(r.Context()).All() {
		api.dash.ServeHTTP(w, r)
		return
	}
	p, _ := access.FromContext(r.Context())
	api.scopedDash(p).ServeHTTP(w, r)
}

// maxScopedDocs bounds the snapshots kept for scoped principals, one per distinct set of
// grants; past it, the oldest is dropped (and computed again when asked for).
const maxScopedDocs = 64

// scopedDocs are the fleet document snapshots of scoped principals, by their grants.
type scopedDocs struct {
	mu    sync.Mutex
	docs  map[string]*dashboard.Snapshots
	order []string // keys, oldest first
}

func (api *API) scopedDash(p access.Principal) *dashboard.Snapshots {
	key := p.Role()
	d := &api.scoped
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.docs[key]; ok {
		return s
	}
	if d.docs == nil {
		d.docs = map[string]*dashboard.Snapshots{}
	}
	if len(d.order) >= maxScopedDocs {
		delete(d.docs, d.order[0])
		d.order = d.order[1:]
	}
	grants := access.Principal{Grants: p.Grants}
	s := dashboard.NewSnapshots(func(ctx context.Context) (any, error) {
		// The scope of the fleet in force when it is computed, not when first asked for.
		return api.dashboardFleet(httpapi.WithScope(ctx, access.NewScope(grants, api.d.View().Fleet)))
	}, dashboard.SnapshotOptions{Now: api.d.Clock.Now})
	d.docs[key] = s
	d.order = append(d.order, key)
	return s
}

// dashboardFleet is the fleet document of ctx's scope.
func (api *API) dashboardFleet(ctx context.Context) (dashboard.Fleet, error) {
	st, err := api.statusView(ctx, hubclient.StatusFilter{})
	if err != nil {
		return dashboard.Fleet{}, err
	}
	stored, err := api.d.Store.ListClusters(ctx)
	if err != nil {
		return dashboard.Fleet{}, err
	}
	clusters := make([]dashboard.Cluster, 0, len(stored))
	for _, c := range stored {
		if !httpapi.VisibleCluster(ctx, c) {
			continue
		}
		seen, _ := api.d.Seen.Get(c)
		clusters = append(clusters, dashboard.Cluster{Name: c.Name, Labels: c.Labels, Seen: !seen.IsZero(), Reachable: api.reachable(seen)})
	}
	return dashboard.Build(st, api.releaseNames(ctx), clusters), nil
}
