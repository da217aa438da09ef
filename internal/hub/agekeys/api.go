package agekeys

// The route of GET /api/v1/agekeys: the age recipients of the clusters a set of label
// selectors picks, the selected clusters without one, and the hub's recovery recipients; what
// `flotilla secret encrypt` encrypts for. It is read-only and shows only public keys; the hub
// serves it on the httpapi.Server beside the other user-facing APIs, for viewers, and a viewer
// sees only the clusters in its scope.

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Bounds on a request's selectors.
const (
	maxSelectors     = 32
	maxSelectorBytes = 1024
)

// APIStore is the part of the hub's store the route reads.
type APIStore interface {
	ListClusters(ctx context.Context) ([]store.Cluster, error)
	ListRecords(ctx context.Context, kind string) ([]store.Record, error)
}

// API serves the route.
type API struct {
	st       APIStore
	recovery []string
}

// NewAPI returns the route's API: clusters and recipients from st; recovery are the hub's
// recovery recipients (checked by the hub's configuration).
func NewAPI(st APIStore, recovery []string) *API {
	return &API{st: st, recovery: slices.Clone(recovery)}
}

// Routes are the routes, for an httpapi.Server.
func (a *API) Routes() []httpapi.Route {
	return []httpapi.Route{{Pattern: "GET /api/v1/agekeys", Rule: httpapi.RuleView, Handler: http.HandlerFunc(a.list)}}
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query()["selector"]
	if len(raw) == 0 {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: at least one selector is required (?selector=env=prod)"))
		return
	}
	if len(raw) > maxSelectors {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: %d selectors, at most %d", len(raw), maxSelectors))
		return
	}
	project := v1alpha1.ProjectOrPlatform(r.URL.Query().Get("project"))
	if len(project) > 63 {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: project is %d bytes, at most 63", len(project)))
		return
	}
	sels := make([]labels.Selector, len(raw))
	for i, s := range raw {
		if len(s) > maxSelectorBytes {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: selector %d is %d bytes, at most %d", i+1, len(s), maxSelectorBytes))
			return
		}
		sel, err := labels.Parse(s)
		if err != nil {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: selector %q: %w", s, err))
			return
		}
		if sel.Empty() {
			// An empty selector matches every cluster: too easy to do by mistake.
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("agekeys: selector %q selects every cluster; name labels (env=prod)", s))
			return
		}
		sels[i] = sel
	}
	clusters, err := a.st.ListClusters(r.Context())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	records, err := a.st.ListRecords(r.Context(), Kind)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	keys := make(map[string]string, len(records))
	for _, rec := range records {
		if rcp, err := Decode(rec); err == nil && rcp != "" {
			keys[rec.Key] = rcp
		}
	}
	precords, err := a.st.ListRecords(r.Context(), ProjectKind)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	projects := make(map[string]map[string]string, len(precords))
	for _, rec := range precords {
		if ps, err := DecodeProjects(rec); err == nil {
			projects[rec.Key] = ps
		}
	}
	out := hubclient.AgeKeysView{Project: project, Clusters: []hubclient.ClusterAgeKey{}, Missing: []string{}, RecoveryRecipients: a.recovery}
	if out.RecoveryRecipients == nil {
		out.RecoveryRecipients = []string{}
	}
	for _, c := range clusters {
		if !httpapi.VisibleCluster(r.Context(), c) || !slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(labels.Set(c.Labels)) }) {
			continue
		}
		k, ok := keys[c.Name]
		if project != v1alpha1.ProjectPlatform {
			// The project's key on that cluster, never the cluster's own: a release of the
			// project decrypts with nothing else.
			k, ok = projects[c.Name][project]
		}
		if ok && k != "" {
			out.Clusters = append(out.Clusters, hubclient.ClusterAgeKey{Name: c.Name, AgeRecipient: k, Projects: httpapi.VisibleProjects(r.Context(), projects[c.Name])})
		} else {
			out.Missing = append(out.Missing, c.Name)
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
