package userapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/agekeys"
	"github.com/flotilla/flotilla/internal/hub/fleetview"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window/hold"
)

func (api *API) addCluster(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	if errs := validation.IsDNS1123Label(req.Name); len(errs) > 0 {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("cluster name %q: %s", req.Name, strings.Join(errs, "; ")))
		return
	}
	if err := validateLabels(req.Labels); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	err := api.d.Store.AddCluster(r.Context(), store.Cluster{Name: req.Name, Labels: req.Labels, CreatedAt: api.d.Clock.Now()})
	if errors.Is(err, store.ErrExists) {
		httpapi.WriteError(w, http.StatusConflict, fmt.Errorf("cluster %q already exists", req.Name))
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	api.d.Logger.Info("cluster added", "cluster", req.Name, "labels", req.Labels)
	api.record(r.Context(), audit.Event{Action: "cluster.added", Cluster: req.Name, Detail: map[string]any{"labels": labelsDetail(req.Labels)}})
	api.clustersChanged()
	api.issueToken(w, r, req.Name, req.Labels, http.StatusCreated)
}

func (api *API) listClusters(w http.ResponseWriter, r *http.Request) {
	clusters, err := api.d.Store.ListClusters(r.Context())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]hubclient.ClusterView, 0, len(clusters))
	for _, c := range clusters {
		if !httpapi.VisibleCluster(r.Context(), c) {
			continue
		}
		out = append(out, api.clusterView(r, c))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// getCluster is the cluster with everything `flotilla cluster show` prints: each
// assignment's status, the agent's outbox depth and the cluster's conditions.
func (api *API) getCluster(w http.ResponseWriter, r *http.Request) {
	c, err := api.d.Store.GetCluster(r.Context(), r.PathValue("name"))
	if err == nil && !httpapi.VisibleCluster(r.Context(), c) {
		err = store.ErrNotFound // as if it did not exist: its name tells nothing
	}
	if err != nil {
		writeStoreError(w, err, r.PathValue("name"))
		return
	}
	v := api.clusterView(r, c)
	fd, err := api.loadFleet(r.Context(), hubclient.StatusFilter{Cluster: c.Name})
	if err != nil {
		writeViewError(w, err)
		return
	}
	v.Status = fd.assignments
	seen, _ := api.d.Seen.Get(c)
	v.Conditions = fleetview.Conditions(seen, api.o.UnreachableAfter, api.d.Clock.Now(), v.Status)
	if depth, ok := api.d.Seen.OutboxDepth(c.Name); ok {
		v.OutboxDepth = &depth
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}

func (api *API) clusterView(r *http.Request, c store.Cluster) hubclient.ClusterView {
	c.LastSeen, c.AgentVersion = api.d.Seen.Get(c)
	v := hubclient.ClusterView{Name: c.Name, Labels: c.Labels, CreatedAt: c.CreatedAt, AgentVersion: c.AgentVersion, Assignments: []string{}}
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	if !c.LastSeen.IsZero() {
		t := c.LastSeen
		v.LastSeen = &t
		v.Reachable = api.reachable(t)
	}
	v.AgeRecipient, _ = agekeys.Get(r.Context(), api.d.Store, c.Name)
	projects, _ := agekeys.GetProjects(r.Context(), api.d.Store, c.Name)
	v.ProjectAgeRecipients = httpapi.VisibleProjects(r.Context(), projects)
	if st, err := api.d.Store.ReportStats(r.Context(), c.Name); err == nil {
		v.ReportsIngested, v.ReportsCompacted, v.LastReportSeq = st.Ingested, st.Compacted, st.LastSeq
	}
	if ds, err := api.d.Store.GetDesiredState(r.Context(), c.Name); err == nil {
		v.Generation = ds.Generation
		if as, err := api.d.Desired.Decode(c.Name, ds.Document); err == nil {
			for _, a := range as {
				if httpapi.ScopeOf(r.Context()).Release(a.Release) {
					v.Assignments = append(v.Assignments, a.Release)
				}
			}
		}
	}
	return v
}

func (api *API) labelCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req struct {
		// Labels to set; a null value removes the label.
		Labels map[string]*string `json:"labels"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	c, err := api.d.Store.GetCluster(r.Context(), name)
	if err != nil {
		writeStoreError(w, err, name)
		return
	}
	labels := map[string]string{}
	for k, v := range c.Labels {
		labels[k] = v
	}
	for k, v := range req.Labels {
		if v == nil {
			delete(labels, k)
		} else {
			labels[k] = *v
		}
	}
	if err := validateLabels(labels); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	if err := api.d.Store.SetClusterLabels(r.Context(), name, labels); err != nil {
		writeStoreError(w, err, name)
		return
	}
	api.d.Logger.Info("cluster relabelled", "cluster", name, "labels", labels)
	api.record(r.Context(), audit.Event{Action: "cluster.relabelled", Cluster: name, Detail: map[string]any{"old": labelsDetail(c.Labels), "new": labelsDetail(labels)}})
	api.d.ClusterRelabelled(name, httpapi.Actor(r.Context()))
	api.clustersChanged()
	c.Labels = labels
	httpapi.WriteJSON(w, http.StatusOK, api.clusterView(r, c))
}

func (api *API) removeCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := api.d.Store.RemoveCluster(r.Context(), name); err != nil {
		writeStoreError(w, err, name)
		return
	}
	// A cluster registered again under this name starts unsuspended.
	if err := api.d.Store.DeleteRecord(r.Context(), hold.RecordSuspend, name, store.AnyVersion); err != nil && !errors.Is(err, store.ErrNotFound) {
		api.d.Logger.Warn("cluster removed, but its suspension was not; it holds a cluster registered again under this name until `flotilla cluster resume`",
			"cluster", name, "error", err)
	}
	// Its age key is gone with it: a cluster registered again under this name makes a new one.
	if err := agekeys.Delete(r.Context(), api.d.Store, name); err != nil {
		api.d.Logger.Warn("cluster removed, but its age recipient record was not", "cluster", name, "error", err)
	}
	// Its certificates are revoked in the store; end its open streams now.
	api.d.ClusterRemoved(name)
	api.d.Logger.Info("cluster removed; its certificates are revoked", "cluster", name)
	api.record(r.Context(), audit.Event{Action: "cluster.removed", Cluster: name})
	api.clustersChanged()
	w.WriteHeader(http.StatusNoContent)
}

func validateLabels(labels map[string]string) error {
	for k, v := range labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// labelsDetail copies labels for a record (never nil, so the record shows {} for none).
func labelsDetail(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	return out
}
