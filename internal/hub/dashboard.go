package hub

import (
	"context"
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/dashboard"
	"github.com/flotilla/flotilla/internal/hubapi"
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
//   - GET /api/v1/dashboard/fleet: the compact fleet document (dashboard.Fleet) with an ETag;
//     computed at most once a second however many dashboards poll it.
//   - GET /api/v1/dashboard/clusters/{name}: every assignment of one cluster, in full.
func (h *Hub) dashboardAPI(mux *http.ServeMux) {
	snaps := dashboard.NewSnapshots(func(ctx context.Context) (any, error) { return h.dashboardFleet(ctx) }, dashboard.SnapshotOptions{Now: h.now})
	mux.Handle("GET /api/v1/dashboard/fleet", snaps)
	mux.HandleFunc("GET /api/v1/dashboard/clusters/{name}", h.dashboardCluster)
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
		seen, _ := h.seen.get(c)
		clusters = append(clusters, dashboard.Cluster{Name: c.Name, Labels: c.Labels, Seen: !seen.IsZero(), Reachable: h.reachable(seen)})
	}
	var releases []string
	h.ctrl.mu.Lock()
	if h.ctrl.fleet != nil {
		for _, r := range h.ctrl.fleet.Releases {
			releases = append(releases, r.Metadata.Name)
		}
	}
	h.ctrl.mu.Unlock()
	return dashboard.Build(st, releases, clusters), nil
}

func (h *Hub) dashboardCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := h.store.GetCluster(r.Context(), name); err != nil {
		writeStoreError(w, err, name)
		return
	}
	st, err := h.fleetStatus(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := []hubapi.AssignmentView{}
	for _, a := range st.Assignments {
		if a.Cluster == name {
			out = append(out, a)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
