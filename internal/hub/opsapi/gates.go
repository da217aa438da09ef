package opsapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// Audit actions of freezes and suspensions.
const (
	ActionFreezeCreated  = "freeze.created"
	ActionFreezeLifted   = "freeze.lifted"
	ActionClusterSuspend = "cluster.suspended"
	ActionClusterResumed = "cluster.resumed"
	maxGateBody          = 16 << 10
	// maxFreezes bounds the freezes in force: every one travels in the documents of the
	// clusters it covers.
	maxFreezes = 100
)

// gateRoutes: freezes and cluster suspensions.
//
// A freeze of one release is the business of its project's deployers, so it lives under
// the release's path (RuleDeployRelease reads {release}); freezing every release, and
// suspending a cluster, which holds every project's releases, need a deployer of every
// project.
func (a *API) gateRoutes() []httpapi.Route {
	h := func(f http.HandlerFunc) http.Handler { return f }
	return []httpapi.Route{
		{Pattern: "GET /api/v1/freezes", Rule: httpapi.RuleView, Handler: h(a.listFreezes)},
		{Pattern: "POST /api/v1/freezes", Rule: httpapi.RuleDeployFleet, Handler: h(a.freeze)},
		{Pattern: "POST /api/v1/releases/{release}/freeze", Rule: httpapi.RuleDeployRelease, Handler: h(a.freeze)},
		{Pattern: "DELETE /api/v1/freezes/{id}", Rule: httpapi.RuleDeployFleet, Handler: h(a.unfreeze)},
		{Pattern: "DELETE /api/v1/releases/{release}/freezes/{id}", Rule: httpapi.RuleDeployRelease, Handler: h(a.unfreeze)},
		{Pattern: "POST /api/v1/clusters/{name}/suspend", Rule: httpapi.RuleDeployFleet, Handler: h(a.suspendCluster)},
		{Pattern: "POST /api/v1/clusters/{name}/resume", Rule: httpapi.RuleDeployFleet, Handler: h(a.resumeCluster)},
	}
}

// freeze stores a freeze record (the controller puts it into the documents of the clusters
// it covers), audits it with the actor and reason, and wakes the controller.
func (a *API) freeze(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	release := r.PathValue("release")
	var req hubclient.FreezeRequest
	if !readBody(w, r, maxGateBody, &req, "", `{"selector": {"key": "value"}, "reason": "..."}`) {
		return
	}
	reason, err := hold.CheckReason(req.Reason, true)
	if err == nil {
		err = hold.CheckSelector(req.Selector)
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("freeze: %w", err))
		return
	}
	if release != "" {
		fleet := a.d.View().Fleet
		if fleet == nil {
			httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("freeze: the hub has not loaded a fleet configuration yet"))
			return
		}
		if !slices.ContainsFunc(fleet.Releases, func(rel v1alpha1.Release) bool { return rel.Metadata.Name == release }) {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("freeze: release %q is not in the fleet configuration", release))
			return
		}
	}
	existing, err := a.d.Store.ListRecords(ctx, hold.RecordFreeze)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("freeze: read the freezes in force: %w", err))
		return
	}
	if len(existing) >= maxFreezes {
		httpapi.WriteError(w, http.StatusConflict, fmt.Errorf("freeze: %d freezes are in force already, the most the hub keeps; lift some with flotilla unfreeze, or freeze with a wider selector", len(existing)))
		return
	}
	id, err := newID("frz-")
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	f := hold.Freeze{ID: id, Release: release, Selector: req.Selector, Reason: reason, Actor: httpapi.Actor(ctx), Created: a.d.Clock.Now().UTC()}
	data, err := json.Marshal(f)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	if _, err := a.d.Store.PutRecord(ctx, store.Record{Kind: hold.RecordFreeze, Key: id, Data: data}, 0); err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("store freeze %s: %w", id, err))
		return
	}
	a.record(ctx, audit.Event{Action: ActionFreezeCreated, Release: release, Detail: freezeDetail(f)})
	a.d.Logger.Info("freeze", "id", id, "release", release, "selector", f.Selector, "actor", f.Actor, "reason", reason)
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusCreated, a.freezeView(ctx, f, nil))
}

// listFreezes answers the freezes in force that the principal may see, oldest first.
func (a *API) listFreezes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	records, err := a.d.Store.ListRecords(ctx, hold.RecordFreeze)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the freezes: %w", err))
		return
	}
	clusters, err := a.d.Store.ListClusters(ctx)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the clusters: %w", err))
		return
	}
	visible := a.freezeVisible(ctx)
	out := make([]hubclient.FreezeView, 0, len(records))
	for _, rec := range records {
		if f := decodeFreeze(rec); visible(f) {
			out = append(out, a.freezeView(ctx, f, clusters))
		}
	}
	slices.SortFunc(out, func(x, y hubclient.FreezeView) int {
		return cmp.Or(x.Created.Compare(y.Created), strings.Compare(x.ID, y.ID))
	})
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// freezeVisible returns whether ctx's principal may see a freeze: a freeze of every release
// concerns everyone; a freeze of one release (its reason among others) only the viewers of
// that release's project, as the release itself.
func (a *API) freezeVisible(ctx context.Context) func(hold.Freeze) bool {
	p, _ := access.FromContext(ctx)
	if p.CanEverywhere(access.Viewer) {
		return func(hold.Freeze) bool { return true }
	}
	projects := map[string]string{}
	if fleet := a.d.View().Fleet; fleet != nil {
		for _, r := range fleet.Releases {
			projects[r.Metadata.Name] = r.Spec.Project
		}
	}
	return func(f hold.Freeze) bool {
		project, known := projects[f.Release]
		return f.Release == "" || (known && p.Can(access.Viewer, project))
	}
}

// unfreeze lifts a freeze. Through a release's path, only a freeze of that release.
func (a *API) unfreeze(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, release := r.PathValue("id"), r.PathValue("release")
	rec, err := a.d.Store.GetRecord(ctx, hold.RecordFreeze, id)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("freeze %q not found: see flotilla freeze list", id))
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("freeze %q: %w", id, err))
		return
	}
	f := decodeFreeze(rec)
	if release != "" && f.Release != release {
		httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("freeze %q is not a freeze of release %q", id, release))
		return
	}
	if err := a.d.Store.DeleteRecord(ctx, hold.RecordFreeze, id, rec.Version); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			status = http.StatusConflict
		}
		httpapi.WriteError(w, status, fmt.Errorf("lift freeze %q: %w", id, err))
		return
	}
	detail := freezeDetail(f)
	detail["frozenBy"] = f.Actor
	a.record(ctx, audit.Event{Action: ActionFreezeLifted, Release: f.Release, Detail: detail})
	a.d.Logger.Info("freeze lifted", "id", id, "release", f.Release, "actor", httpapi.Actor(ctx))
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusOK, a.freezeView(ctx, f, nil))
}

// suspendCluster suspends a cluster; a cluster already suspended stays as it was.
func (a *API) suspendCluster(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	var req hubclient.SuspendRequest
	if !readBody(w, r, maxGateBody, &req, "", `{"reason": "..."}`) {
		return
	}
	reason, err := hold.CheckReason(req.Reason, false)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("suspend: %w", err))
		return
	}
	if !a.clusterExists(w, r, name) {
		return
	}
	s := hold.Suspension{Cluster: name, Reason: reason, Actor: httpapi.Actor(ctx), Since: a.d.Clock.Now().UTC()}
	data, err := json.Marshal(s)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	if _, err := a.d.Store.PutRecord(ctx, store.Record{Kind: hold.RecordSuspend, Key: name, Data: data}, 0); err != nil {
		if errors.Is(err, store.ErrConflict) {
			if rec, err := a.d.Store.GetRecord(ctx, hold.RecordSuspend, name); err == nil {
				httpapi.WriteJSON(w, http.StatusOK, suspensionView(decodeSuspension(rec), false))
				return
			}
		}
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("suspend cluster %q: %w", name, err))
		return
	}
	detail := map[string]any{}
	if reason != "" {
		detail["reason"] = reason
	}
	a.record(ctx, audit.Event{Action: ActionClusterSuspend, Cluster: name, Detail: detail})
	a.d.Logger.Info("cluster suspended", "cluster", name, "actor", s.Actor, "reason", reason)
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusOK, suspensionView(s, true))
}

// resumeCluster lifts a cluster's suspension; a cluster not suspended stays as it was.
func (a *API) resumeCluster(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	if !a.clusterExists(w, r, name) {
		return
	}
	rec, err := a.d.Store.GetRecord(ctx, hold.RecordSuspend, name)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteJSON(w, http.StatusOK, hubclient.SuspensionView{Cluster: name})
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("suspension of cluster %q: %w", name, err))
		return
	}
	if err := a.d.Store.DeleteRecord(ctx, hold.RecordSuspend, name, rec.Version); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			httpapi.WriteJSON(w, http.StatusOK, hubclient.SuspensionView{Cluster: name})
			return
		}
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("resume cluster %q: %w", name, err))
		return
	}
	s := decodeSuspension(rec)
	detail := map[string]any{"suspendedBy": s.Actor, "since": s.Since.Format(time.RFC3339)}
	if s.Reason != "" {
		detail["reason"] = s.Reason
	}
	a.record(ctx, audit.Event{Action: ActionClusterResumed, Cluster: name, Detail: detail})
	a.d.Logger.Info("cluster resumed", "cluster", name, "actor", httpapi.Actor(ctx))
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusOK, hubclient.SuspensionView{Cluster: name, Changed: true})
}

// clusterExists answers 404 (or 503) and returns false unless the cluster is registered.
func (a *API) clusterExists(w http.ResponseWriter, r *http.Request, name string) bool {
	_, err := a.d.Store.GetCluster(r.Context(), name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("cluster %q not found", name))
		return false
	case err != nil:
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("cluster %q: %w", name, err))
		return false
	}
	return true
}

// decodeFreeze reads a freeze record; one that does not decode is shown as the controller
// treats it, a freeze of everything.
func decodeFreeze(rec store.Record) hold.Freeze {
	f, _ := hold.DecodeFreeze(rec.Key, rec.Data, rec.UpdatedAt)
	return f
}

func decodeSuspension(rec store.Record) hold.Suspension {
	s, _ := hold.DecodeSuspension(rec.Key, rec.Data, rec.UpdatedAt)
	return s
}

// freezeView shows f with the number of clusters it matches; clusters nil: read them.
func (a *API) freezeView(ctx context.Context, f hold.Freeze, clusters []store.Cluster) hubclient.FreezeView {
	if clusters == nil {
		clusters, _ = a.d.Store.ListClusters(ctx) // a count of 0 on a failed read is only shown
	}
	n := 0
	for _, c := range clusters {
		if f.Covers(c.Labels) {
			n++
		}
	}
	return hubclient.FreezeView{ID: f.ID, Release: f.Release, Selector: f.Selector, Reason: f.Reason, Actor: f.Actor, Created: f.Created, Clusters: n}
}

func freezeDetail(f hold.Freeze) map[string]any {
	d := map[string]any{"id": f.ID, "reason": f.Reason}
	if f.Release == "" {
		d["releases"] = "all"
	}
	if len(f.Selector) == 0 {
		d["clusters"] = "all"
	} else {
		d["selector"] = f.Selector
	}
	return d
}

func suspensionView(s hold.Suspension, changed bool) hubclient.SuspensionView {
	since := s.Since
	return hubclient.SuspensionView{Cluster: s.Cluster, Suspended: true, Reason: s.Reason, Actor: s.Actor, Since: &since, Changed: changed}
}
