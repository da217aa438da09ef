package hub

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/fleetview"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
	"github.com/flotilla/flotilla/internal/pki"
)

// DefaultUnreachableAfter is Options.UnreachableAfter's default: a cluster whose agent has not
// been heard from for this long is shown as unreachable, never as Ready.
const DefaultUnreachableAfter = 2 * time.Minute

func (h *Hub) apiHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/clusters", h.addCluster)
	mux.HandleFunc("GET /api/v1/clusters", h.listClusters)
	mux.HandleFunc("GET /api/v1/clusters/{name}", h.getCluster)
	mux.HandleFunc("PATCH /api/v1/clusters/{name}/labels", h.labelCluster)
	mux.HandleFunc("DELETE /api/v1/clusters/{name}", h.removeCluster)
	mux.HandleFunc("POST /api/v1/clusters/{name}/token", h.newToken)
	mux.HandleFunc("GET /api/v1/releases", h.listReleases)
	mux.HandleFunc("GET /api/v1/sources", h.listSources)
	mux.HandleFunc("GET /api/v1/status", h.status)
	mux.HandleFunc("GET /api/v1/skew", h.skew)
	mux.HandleFunc("GET /api/v1/drift", h.drift)
	mux.HandleFunc("GET /api/v1/audit", h.listAudit)
	mux.HandleFunc("GET /api/v1/audit/verify", h.verifyAudit)
	h.dashboardAPI(mux)
	root := http.NewServeMux()
	root.Handle("/api/", h.requireAdmin(h.auditAPICalls(mux)))
	// The dashboard's pages hold no fleet data; they read it from /api/ with the same token.
	root.Handle("/", h.dashboardHandler())
	return root
}

func (h *Hub) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.adminToken)) != 1 {
			writeError(w, http.StatusUnauthorized, errors.New("a valid bearer token is required (see admin.token in the hub's data dir)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Hub) addCluster(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	if errs := validation.IsDNS1123Label(req.Name); len(errs) > 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("cluster name %q: %s", req.Name, strings.Join(errs, "; ")))
		return
	}
	if err := validateLabels(req.Labels); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	err := h.store.AddCluster(r.Context(), store.Cluster{Name: req.Name, Labels: req.Labels, CreatedAt: h.clock.Now()})
	if errors.Is(err, store.ErrExists) {
		writeError(w, http.StatusConflict, fmt.Errorf("cluster %q already exists", req.Name))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.log.Info("cluster added", "cluster", req.Name, "labels", req.Labels)
	h.record(r.Context(), audit.Event{Actor: "admin", Action: "cluster.added", Cluster: req.Name, Detail: map[string]any{"labels": labelsDetail(req.Labels)}})
	h.clustersChanged()
	h.issueToken(w, r, req.Name, req.Labels, http.StatusCreated)
}

func (h *Hub) newToken(w http.ResponseWriter, r *http.Request) {
	c, err := h.store.GetCluster(r.Context(), r.PathValue("name"))
	if err != nil {
		writeStoreError(w, err, r.PathValue("name"))
		return
	}
	h.issueToken(w, r, c.Name, c.Labels, http.StatusOK)
}

func (h *Hub) issueToken(w http.ResponseWriter, r *http.Request, cluster string, labels map[string]string, status int) {
	tok, err := pki.NewJoinToken(cluster, h.ca.Fingerprint())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	expires := h.clock.Now().Add(h.opts.TokenTTL)
	if err := h.store.CreateJoinToken(r.Context(), store.JoinToken{ID: tok.ID, SecretHash: pki.SecretHash(tok.Secret), Cluster: cluster, ExpiresAt: expires}); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	h.log.Info("join token issued", "cluster", cluster, "token", tok.ID, "expires", expires)
	h.record(r.Context(), audit.Event{Actor: "admin", Action: "token.issued", Cluster: cluster, Detail: map[string]any{"token": tok.ID, "expiresAt": expires.UTC()}})
	enc := tok.Encode()
	writeJSON(w, status, hubapi.JoinView{
		Name: cluster, Labels: labels, JoinToken: enc, ExpiresAt: expires,
		AgentCommand: fmt.Sprintf("flotilla agent --hub %s --join-token %s --kubeconfig KUBECONFIG --state-dir STATE_DIR", h.AgentURL(), enc),
	})
}

func (h *Hub) listClusters(w http.ResponseWriter, r *http.Request) {
	clusters, err := h.store.ListClusters(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]hubapi.ClusterView, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, h.clusterView(r, c))
	}
	writeJSON(w, http.StatusOK, out)
}

// getCluster is the cluster with everything `flotilla cluster show` prints: each
// assignment's status, the agent's outbox depth and the cluster's conditions.
func (h *Hub) getCluster(w http.ResponseWriter, r *http.Request) {
	c, err := h.store.GetCluster(r.Context(), r.PathValue("name"))
	if err != nil {
		writeStoreError(w, err, r.PathValue("name"))
		return
	}
	v := h.clusterView(r, c)
	fd, err := h.loadFleet(r.Context(), hubapi.StatusFilter{Cluster: c.Name})
	if err != nil {
		writeViewError(w, err)
		return
	}
	v.Status = fd.assignments
	seen, _ := h.seen.Get(c)
	v.Conditions = fleetview.Conditions(seen, h.opts.UnreachableAfter, h.clock.Now(), v.Status)
	if depth, ok := h.seen.OutboxDepth(c.Name); ok {
		v.OutboxDepth = &depth
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Hub) clusterView(r *http.Request, c store.Cluster) hubapi.ClusterView {
	c.LastSeen, c.AgentVersion = h.seen.Get(c)
	v := hubapi.ClusterView{Name: c.Name, Labels: c.Labels, CreatedAt: c.CreatedAt, AgentVersion: c.AgentVersion, Assignments: []string{}}
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	if !c.LastSeen.IsZero() {
		t := c.LastSeen
		v.LastSeen = &t
		v.Reachable = h.reachable(t)
	}
	if st, err := h.store.ReportStats(r.Context(), c.Name); err == nil {
		v.ReportsIngested, v.ReportsCompacted, v.LastReportSeq = st.Ingested, st.Compacted, st.LastSeq
	}
	if ds, err := h.store.GetDesiredState(r.Context(), c.Name); err == nil {
		v.Generation = ds.Generation
		if as, err := h.desired.Decode(c.Name, ds.Document); err == nil {
			for _, a := range as {
				v.Assignments = append(v.Assignments, a.Release)
			}
		}
	}
	return v
}

func (h *Hub) labelCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req struct {
		// Labels to set; a null value removes the label.
		Labels map[string]*string `json:"labels"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	c, err := h.store.GetCluster(r.Context(), name)
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
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := h.store.SetClusterLabels(r.Context(), name, labels); err != nil {
		writeStoreError(w, err, name)
		return
	}
	h.log.Info("cluster relabelled", "cluster", name, "labels", labels)
	h.record(r.Context(), audit.Event{Actor: "admin", Action: "cluster.relabelled", Cluster: name, Detail: map[string]any{"old": labelsDetail(c.Labels), "new": labelsDetail(labels)}})
	h.clustersChanged()
	c.Labels = labels
	writeJSON(w, http.StatusOK, h.clusterView(r, c))
}

func (h *Hub) removeCluster(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.store.RemoveCluster(r.Context(), name); err != nil {
		writeStoreError(w, err, name)
		return
	}
	// Its certificates are revoked in the store; end its open streams now.
	h.auth.ForgetCluster(name)
	h.watchers.CloseCluster(name)
	h.seen.Forget(name)
	h.agent.ForgetCluster(name)
	h.log.Info("cluster removed; its certificates are revoked", "cluster", name)
	h.record(r.Context(), audit.Event{Actor: "admin", Action: "cluster.removed", Cluster: name})
	h.clustersChanged()
	w.WriteHeader(http.StatusNoContent)
}

func (h *Hub) listReleases(w http.ResponseWriter, r *http.Request) {
	fleet := h.ctrl.View().Fleet
	assigned := h.assignedClusters(r)
	out := []hubapi.ReleaseView{}
	if fleet != nil {
		for _, rel := range fleet.Releases {
			cl := assigned[rel.Metadata.Name]
			if cl == nil {
				cl = []string{}
			}
			out = append(out, hubapi.ReleaseView{Name: rel.Metadata.Name, Source: rel.Spec.Source, Path: rel.Spec.Path, Namespace: rel.Spec.Namespace, Clusters: cl})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// assignedClusters names, per release, the clusters it is assigned to, in name order.
func (h *Hub) assignedClusters(r *http.Request) map[string][]string {
	out := map[string][]string{}
	docs, _ := h.store.ListDesiredStates(r.Context()) // ordered by cluster
	for _, ds := range docs {
		as, _ := h.desired.Decode(ds.Cluster, ds.Document)
		for _, a := range as {
			out[a.Release] = append(out[a.Release], ds.Cluster)
		}
	}
	return out
}

func (h *Hub) listSources(w http.ResponseWriter, r *http.Request) {
	sts, err := h.store.ListSourceStatuses(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]hubapi.SourceView, 0, len(sts))
	for _, s := range sts {
		out = append(out, hubapi.SourceView{Name: s.Name, URL: s.URL, Revision: s.Revision, Digest: s.Digest, Error: s.Error, CheckedAt: s.CheckedAt})
	}
	writeJSON(w, http.StatusOK, out)
}

// status is the fleet's status; ?release=R and ?cluster=C keep only those assignments, and
// ?summary=true leaves the assignments out (the per-release counts stay).
func (h *Hub) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out, err := h.statusView(r.Context(), hubapi.StatusFilter{Release: q.Get("release"), Cluster: q.Get("cluster")})
	if err != nil {
		writeViewError(w, err)
		return
	}
	if q.Get("summary") == "true" {
		out.Assignments = []hubapi.AssignmentView{}
	}
	writeJSON(w, http.StatusOK, out)
}

// skew is, per release (?release=R: that one), the clusters grouped by applied revision.
func (h *Hub) skew(w http.ResponseWriter, r *http.Request) {
	out, err := h.skewView(r.Context(), r.URL.Query().Get("release"))
	if err != nil {
		writeViewError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// drift lists drifted objects; ?release=R and ?cluster=C narrow it.
func (h *Hub) drift(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out, err := h.driftView(r.Context(), hubapi.DriftFilter{Release: q.Get("release"), Cluster: q.Get("cluster")})
	if err != nil {
		writeViewError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// writeViewError answers 404 for an unknown release or cluster, 500 otherwise.
func writeViewError(w http.ResponseWriter, err error) {
	var unknown errUnknown
	if errors.As(err, &unknown) {
		writeError(w, http.StatusNotFound, err)
		return
	}
	writeError(w, http.StatusInternalServerError, err)
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

// writeJSON writes v as compact JSON: indenting the status of 20,000 assignments took a
// fifth of the request's time (the CLI and jq indent for people).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, hubapi.APIError{Error: err.Error()})
}

func writeStoreError(w http.ResponseWriter, err error, name string) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Errorf("cluster %q not found", name))
		return
	}
	writeError(w, http.StatusInternalServerError, err)
}

// clustersChanged follows a change to the cluster list or labels: the controller reschedules,
// and the dashboard refreshes even when no assignment moves (it shows labels and clusters).
func (h *Hub) clustersChanged() {
	h.kickController()
	h.dashboardChanged()
}
