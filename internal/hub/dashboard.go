package hub

import "net/http"

// dashboardHandler serves the dashboard's static pages.
func (h *Hub) dashboardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the dashboard is not part of this build yet", http.StatusNotFound)
	})
}
