package userapi

import (
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// status is the fleet's status; ?release=R and ?cluster=C keep only those assignments, and
// ?summary=true leaves the assignments out (the per-release counts stay).
func (api *API) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out, err := api.statusView(r.Context(), hubclient.StatusFilter{Release: q.Get("release"), Cluster: q.Get("cluster")})
	if err != nil {
		writeViewError(w, err)
		return
	}
	if q.Get("summary") == "true" {
		out.Assignments = []hubclient.AssignmentView{}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// skew is, per release (?release=R: that one), the clusters grouped by applied revision.
func (api *API) skew(w http.ResponseWriter, r *http.Request) {
	out, err := api.skewView(r.Context(), r.URL.Query().Get("release"))
	if err != nil {
		writeViewError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// drift lists drifted objects; ?release=R and ?cluster=C narrow it.
func (api *API) drift(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out, err := api.driftView(r.Context(), hubclient.DriftFilter{Release: q.Get("release"), Cluster: q.Get("cluster")})
	if err != nil {
		writeViewError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
