package hub

import "net/http"

// dashboardHandler serves the dashboard's static pages.
func (h *Hub) dashboardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the dashboard is not part of this build yet", http.StatusNotFound)
	})
}

// dashboardAPI adds the API routes only the dashboard uses (behind the same admin token).
func (h *Hub) dashboardAPI(mux *http.ServeMux) {}
