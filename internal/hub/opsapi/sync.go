package opsapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// Audit actions of sync requests.
const (
	ActionSyncRequested = "sync.requested"
	// ActionSyncOverride is a sync that passes windows and freezes: recorded distinctly, so
	// that an audit query for overrides finds every one.
	ActionSyncOverride = "sync.override"
)

// maxSyncBody bounds a sync request's body; maxReason its reason.
const (
	maxSyncBody = 64 << 10
	maxReason   = 1024
)

// syncRoutes: POST /api/v1/releases/{release}/sync (a deployer of the release's project) and
// POST /api/v1/sync (every release: a deployer of every project).
func (a *API) syncRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "POST /api/v1/releases/{release}/sync", Rule: httpapi.RuleDeployRelease, Handler: http.HandlerFunc(a.sync)},
		{Pattern: "POST /api/v1/sync", Rule: httpapi.RuleDeployFleet, Handler: http.HandlerFunc(a.sync)},
	}
}

// sync stores a sync request (a "sync" record the controller puts into the affected
// clusters' documents), audits it with the actor, and wakes the controller.
func (a *API) sync(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	release := r.PathValue("release")
	var req hubclient.SyncRequest
	if !readBody(w, r, maxSyncBody, &req, "sync request: ", `{"cluster": ..., "override": ..., "reason": ...}`) {
		return
	}
	req, err := checkSyncRequest(req)
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	view := a.d.View()
	if view.Fleet == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("sync: the hub has not loaded a fleet configuration yet"))
		return
	}
	if release != "" && !slices.ContainsFunc(view.Fleet.Releases, func(rel v1alpha1.Release) bool { return rel.Metadata.Name == release }) {
		httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("release %q not found in the fleet configuration", release))
		return
	}
	if req.Cluster != "" {
		c, err := a.d.Store.GetCluster(ctx, req.Cluster)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("cluster %q not found", req.Cluster))
				return
			}
			httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("cluster %q: %w", req.Cluster, err))
			return
		}
		if !httpapi.VisibleCluster(ctx, c) {
			p, _ := access.FromContext(ctx)
			httpapi.WriteError(w, http.StatusForbidden, fmt.Errorf("sync refused: cluster %q is outside the scope of %s (%s)", req.Cluster, p.Actor, p.Role()))
			return
		}
	}
	if req.Override {
		p, _ := access.FromContext(ctx)
		if status, err := a.checkOverride(ctx, p, view.Fleet, release, req.Cluster, a.d.Clock.Now()); err != nil {
			httpapi.WriteError(w, status, err)
			return
		}
	}
	id, err := newID("sync-")
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	rec := syncreq.Request{
		ID: id, Release: release, Cluster: req.Cluster, Override: req.Override, Reason: req.Reason,
		Actor: httpapi.Actor(ctx), Created: a.d.Clock.Now().UTC(),
	}
	if done := a.admitSync(w, r, rec); done {
		return
	}
	data, err := json.Marshal(rec)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	if _, err := a.d.Store.PutRecord(ctx, store.Record{Kind: syncreq.Kind, Key: id, Data: data}, 0); err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, fmt.Errorf("store sync request %s: %w", id, err))
		return
	}
	action := ActionSyncRequested
	if rec.Override {
		action = ActionSyncOverride
	}
	detail := map[string]any{"id": id, "override": rec.Override}
	if release == "" {
		detail["releases"] = "all"
	}
	if rec.Cluster == "" {
		detail["clusters"] = "all"
	}
	if rec.Reason != "" {
		detail["reason"] = rec.Reason
	}
	a.record(ctx, audit.Event{Action: action, Release: release, Cluster: rec.Cluster, Detail: detail})
	a.d.Logger.Info("sync requested", "id", id, "release", release, "cluster", rec.Cluster, "override", rec.Override, "actor", rec.Actor)
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusAccepted, syncView(rec))
}

func syncView(r syncreq.Request) hubclient.SyncView {
	return hubclient.SyncView{ID: r.ID, Release: r.Release, Cluster: r.Cluster, Override: r.Override, Reason: r.Reason,
		Actor: r.Actor, Created: r.Created, Expires: r.Expires()}
}

// checkSyncRequest checks a sync request's body and trims its reason.
func checkSyncRequest(req hubclient.SyncRequest) (hubclient.SyncRequest, error) {
	req.Reason = strings.TrimSpace(req.Reason)
	switch {
	case req.Override && req.Reason == "":
		return req, errors.New("sync request: an override needs a reason (it is recorded in the audit trail)")
	case len(req.Reason) > maxReason:
		return req, fmt.Errorf("sync request: reason of %d bytes: at most %d", len(req.Reason), maxReason)
	case strings.ContainsFunc(req.Reason, func(r rune) bool { return r < 0x20 && r != '\t' }):
		return req, errors.New("sync request: the reason has a control character")
	case len(req.Cluster) > 253:
		return req, fmt.Errorf("sync request: cluster name of %d bytes: at most 253", len(req.Cluster))
	}
	return req, nil
}

// admitSync answers, and returns true, when rec is not to be stored: an identical request is
// pending (its view is the answer, 202), or rec would pass a bound on pending requests (429
// with Retry-After, naming the bound).
func (a *API) admitSync(w http.ResponseWriter, r *http.Request, rec syncreq.Request) bool {
	records, err := a.d.Store.ListRecords(r.Context(), syncreq.Kind)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("sync: read the pending sync requests: %w", err))
		return true
	}
	pending := make([]syncreq.Request, 0, len(records))
	for _, record := range records {
		var p syncreq.Request
		if json.Unmarshal(record.Data, &p) == nil {
			pending = append(pending, p)
		}
	}
	same, err := syncreq.Admit(pending, rec, rec.Created)
	if capErr := (*syncreq.CapError)(nil); errors.As(err, &capErr) {
		httpapi.RetryAfter(w, capErr.RetryAt.Sub(rec.Created))
		httpapi.WriteError(w, http.StatusTooManyRequests, err)
		return true
	}
	if same != nil {
		a.d.Logger.Info("sync request coalesced into a pending one", "id", same.ID, "release", same.Release, "cluster", same.Cluster, "actor", rec.Actor)
		httpapi.WriteJSON(w, http.StatusAccepted, syncView(*same))
		return true
	}
	return false
}
