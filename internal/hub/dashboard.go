package hub

import (
	"context"
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/dashboard"
)

// dashboardHandler serves the dashboard's static pages. They hold no fleet data: the page
// reads everything from /api/ with the admin token.
func (h *Hub) dashboardHandler() http.Handler {
	pages, err := dashboard.Pages()
	if err != nil {
		// Only a broken build gets here (the pages are embedded); say so on every request.
		h.log.Error("dashboard not available", "error", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	return pages
}

// dashboardAPI adds the API routes only the dashboard uses (behind the same admin token):
//
//   - GET /api/v1/dashboard/fleet: the compact fleet document (dashboard.Fleet) with an ETag,
//     computed on demand and shared by every open dashboard; computed again after a change
//     (dashboardChanged) or dashboard.DefaultMaxAge, at a pace bounded by its cost.
//
// Everything else the page shows comes from the user API itself (clusters/{name}, drift,
// audit).
func (h *Hub) dashboardAPI(mux *http.ServeMux) {
	h.dash = dashboard.NewSnapshots(func(ctx context.Context) (any, error) { return h.dashboardFleet(ctx) }, dashboard.SnapshotOptions{Now: h.clock.Now})
	mux.Handle("GET /api/v1/dashboard/fleet", h.dash)
}

// dashboardChanged tells the dashboard that the fleet's status changed (a report ingested, a
// desired state written), so open dashboards show it at their next poll. It costs an atomic
// store, and nothing before the API handler exists.
func (h *Hub) dashboardChanged() {
	if h.dash != nil {
		h.dash.Changed()
	}
}

func (h *Hub) dashboardFleet(ctx context.Context) (dashboard.Fleet, error) {
	st, err := h.fleetStatus(ctx)
	if err != nil {
		return dashboard.Fleet{}, err
	}
	stored, err := h.store.ListClusters(ctx)
	if err != nil {
		return dashboard.Fleet{}, err
	}
	clusters := make([]dashboard.Cluster, 0, len(stored))
	for _, c := range stored {
		seen, _ := h.seen.Get(c)
		clusters = append(clusters, dashboard.Cluster{Name: c.Name, Labels: c.Labels, Seen: !seen.IsZero(), Reachable: h.reachable(seen)})
	}
	return dashboard.Build(st, h.releaseNames(), clusters), nil
}
