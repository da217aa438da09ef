package opsapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/textcut"
)

// maxRolloutBody bounds the body of a rollout action; rolloutCASTries the compare-and-swap
// rounds of one action against the controller's steps.
const (
	maxRolloutBody  = 4 << 10
	rolloutCASTries = 5
)

// rolloutRoutes: GET /api/v1/rollouts, GET /api/v1/rollouts/{release},
// POST /api/v1/rollouts/{release}/{action}.
func (a *API) rolloutRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /api/v1/rollouts", Rule: httpapi.RuleView, Handler: http.HandlerFunc(a.listRollouts)},
		{Pattern: "GET /api/v1/rollouts/{release}", Rule: httpapi.RuleView, Handler: http.HandlerFunc(a.getRollout)},
		{Pattern: "POST /api/v1/rollouts/{release}/{action}", Rule: httpapi.RuleDeployRelease, Handler: http.HandlerFunc(a.actOnRollout)},
	}
}

// listRollouts answers every release with a rollout that the principal may view, in the
// fleet's order.
func (a *API) listRollouts(w http.ResponseWriter, r *http.Request) {
	fleet := a.d.View().Fleet
	if fleet == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("rollouts: the hub has not loaded a fleet configuration yet"))
		return
	}
	records, err := a.d.Store.ListRecords(r.Context(), rollout.RecordKind)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the rollouts: %w", err))
		return
	}
	byRelease := make(map[string]store.Record, len(records))
	for _, rec := range records {
		byRelease[rec.Key] = rec
	}
	p, _ := access.FromContext(r.Context())
	out := []phase.RolloutView{}
	for i := range fleet.Releases {
		rel := &fleet.Releases[i]
		if rel.Spec.Rollout == nil || !p.Can(access.Viewer, rel.Spec.Project) {
			continue
		}
		st, err := decodeRollout(byRelease[rel.Metadata.Name])
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		out = append(out, rollout.View(rel.Metadata.Name, rel.Spec.Rollout, st))
		delete(byRelease, rel.Metadata.Name)
	}
	// Deleted releases leaving their clusters along their waves, by name.
	for _, rec := range records {
		if _, left := byRelease[rec.Key]; !left {
			continue
		}
		st, err := decodeRollout(rec)
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		if st.Removing && !inFleet(fleet, rec.Key) && p.Can(access.Viewer, st.Project) {
			out = append(out, rollout.View(rec.Key, st.Spec, st))
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func inFleet(fleet *v1alpha1.Fleet, release string) bool {
	for i := range fleet.Releases {
		if fleet.Releases[i].Metadata.Name == release {
			return true
		}
	}
	return false
}

// getRollout answers one release's rollout. A release the principal may not view is not
// found, as in every view of the user API.
func (a *API) getRollout(w http.ResponseWriter, r *http.Request) {
	rel, ok := a.rolloutRelease(w, r)
	if !ok {
		return
	}
	rec, err := a.d.Store.GetRecord(r.Context(), rollout.RecordKind, rel.Metadata.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the rollout of %s: %w", rel.Metadata.Name, err))
		return
	}
	st, err := decodeRollout(rec)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, rollout.View(rel.Metadata.Name, rel.Spec.Rollout, st))
}

// actOnRollout applies a user's action to a release's rollout by compare-and-swap on its
// record (the controller writes it too), audits it with the actor, and wakes the controller,
// whose next step carries it to the clusters. An action that does not fit where the
// rollout stands answers 409 and says why.
func (a *API) actOnRollout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	action := r.PathValue("action")
	switch action {
	case rollout.ActionPause, rollout.ActionResume, rollout.ActionApprove, rollout.ActionAbort, rollout.ActionRollback:
	default:
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("rollout action %q: use pause, resume, approve, abort or rollback", textcut.Cut(action, 64)))
		return
	}
	body, ok := readRolloutAction(w, r)
	if !ok {
		return
	}
	rel, ok := a.rolloutRelease(w, r)
	if !ok {
		return
	}
	name := rel.Metadata.Name
	actor := httpapi.Actor(ctx)
	var (
		e  phase.RolloutEvent
		st *rollout.State
	)
	for try := 0; ; try++ {
		rec, err := a.d.Store.GetRecord(ctx, rollout.RecordKind, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the rollout of %s: %w", name, err))
			return
		}
		if st, err = decodeRollout(rec); err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		if st.Spec == nil {
			st.Spec = rel.Spec.Rollout
		}
		e, err = rollout.Act(st, action, body.Wave, actor, a.d.Clock.Now().UTC())
		if errors.Is(err, rollout.ErrAction) {
			httpapi.WriteError(w, http.StatusConflict, fmt.Errorf("rollout of %s: %w", name, err))
			return
		}
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		data, err := json.Marshal(st)
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		_, err = a.d.Store.PutRecord(ctx, store.Record{Kind: rollout.RecordKind, Key: name, Data: data}, rec.Version)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) || try+1 >= rolloutCASTries {
			httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("store the rollout of %s: %w", name, err))
			return
		}
	}
	detail := map[string]any{"message": e.Message, "revision": st.Current.Revision, "digest": st.Current.Digest}
	if e.Wave != "" {
		detail["wave"] = e.Wave
	}
	a.record(ctx, audit.Event{Action: "rollout." + e.Type, Release: name, Detail: detail})
	a.d.Logger.Info("rollout action", "release", name, "action", action, "wave", e.Wave, "actor", actor)
	a.d.Wake()
	httpapi.WriteJSON(w, http.StatusOK, rollout.View(name, rel.Spec.Rollout, st))
}

// rolloutRelease returns the release the path names, when it has a rollout and the
// principal may view it, or a deleted release's removal; otherwise it answers the error
// itself.
func (a *API) rolloutRelease(w http.ResponseWriter, r *http.Request) (*v1alpha1.Release, bool) {
	name := r.PathValue("release")
	fleet := a.d.View().Fleet
	if fleet == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("rollouts: the hub has not loaded a fleet configuration yet"))
		return nil, false
	}
	p, _ := access.FromContext(r.Context())
	for i := range fleet.Releases {
		rel := &fleet.Releases[i]
		if rel.Metadata.Name != name || !p.Can(access.Viewer, rel.Spec.Project) {
			continue
		}
		if rel.Spec.Rollout == nil {
			httpapi.WriteError(w, http.StatusConflict, fmt.Errorf("release %s has no rollout: its new revisions go to every cluster at once", name))
			return nil, false
		}
		return rel, true
	}
	if !inFleet(fleet, name) {
		// A deleted release whose removal goes along its waves: its record stands for it.
		rec, err := a.d.Store.GetRecord(r.Context(), rollout.RecordKind, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			httpapi.WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("read the rollout of %s: %w", name, err))
			return nil, false
		}
		if st, err := decodeRollout(rec); err == nil && st.Removing && st.Spec != nil && p.Can(access.Viewer, st.Project) {
			return &v1alpha1.Release{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ReleaseSpec{Project: st.Project, Rollout: st.Spec}}, true
		}
	}
	httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("release %q not found in the fleet configuration", textcut.Cut(name, 64)))
	return nil, false
}

// readRolloutAction reads the bounded body of an action; an empty body is no wave.
func readRolloutAction(w http.ResponseWriter, r *http.Request) (hubclient.RolloutAction, bool) {
	var req hubclient.RolloutAction
	if !readBody(w, r, maxRolloutBody, &req, "rollout action: ", `{"wave": ...}`) {
		return req, false
	}
	if len(req.Wave) > 63 || strings.ContainsFunc(req.Wave, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("rollout action: wave %q is not a wave name (at most 63 characters, no control character)", textcut.Cut(req.Wave, 64)))
		return req, false
	}
	return req, true
}

// decodeRollout decodes a rollout record; a missing one (zero record) is a release that
// never rolled out.
func decodeRollout(rec store.Record) (*rollout.State, error) {
	st := &rollout.State{}
	if len(rec.Data) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(rec.Data, st); err != nil {
		return nil, fmt.Errorf("rollout record of %s does not decode: %w", rec.Key, err)
	}
	return st, nil
}
