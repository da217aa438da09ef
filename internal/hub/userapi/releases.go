package userapi

import (
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

func (api *API) listReleases(w http.ResponseWriter, r *http.Request) {
	fleet := api.d.View().Fleet
	assigned := api.assignedClusters(r)
	out := []hubclient.ReleaseView{}
	scope := httpapi.ScopeOf(r.Context())
	if fleet != nil {
		for _, rel := range fleet.Releases {
			if !scope.Release(rel.Metadata.Name) {
				continue
			}
			cl := assigned[rel.Metadata.Name]
			if cl == nil {
				cl = []string{}
			}
			out = append(out, hubclient.ReleaseView{Name: rel.Metadata.Name, Source: rel.Spec.Source, Path: rel.Spec.Path, Namespace: rel.Spec.Namespace, Clusters: cl})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// assignedClusters names, per release, the clusters of the request's scope it is assigned
// to, in name order.
func (api *API) assignedClusters(r *http.Request) map[string][]string {
	out := map[string][]string{}
	visible := map[string]bool{}
	scope := httpapi.ScopeOf(r.Context())
	if !scope.All() {
		clusters, _ := api.d.Store.ListClusters(r.Context())
		for _, c := range clusters {
			visible[c.Name] = scope.Cluster(c.Labels)
		}
	}
	docs, _ := api.d.Store.ListDesiredStates(r.Context()) // ordered by cluster
	for _, ds := range docs {
		if !scope.All() && !visible[ds.Cluster] {
			continue
		}
		as, _ := api.d.Desired.Decode(ds.Cluster, ds.Document)
		for _, a := range as {
			out[a.Release] = append(out[a.Release], ds.Cluster)
		}
	}
	return out
}

func (api *API) listSources(w http.ResponseWriter, r *http.Request) {
	sts, err := api.d.Store.ListSourceStatuses(r.Context())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]hubclient.SourceView, 0, len(sts))
	visible := api.sourceFilter(r.Context(), api.d.View())
	for _, s := range sts {
		if !visible(s.Name) {
			continue
		}
		out = append(out, hubclient.SourceView{Name: s.Name, URL: s.URL, Revision: s.Revision, Digest: s.Digest, Error: s.Error, CheckedAt: s.CheckedAt})
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
