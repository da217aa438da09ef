// Package opsapi serves the user-facing operations on a fleet in motion: rollouts (status,
// pause, resume, approve, abort, rollback), freezes and cluster suspensions, sync requests,
// plans of a change, and the Git providers' webhooks. What is delivered and where, and who
// may call the hub, are userapi's: opsapi acts on delivery, userapi reads the fleet and
// manages clusters and tokens, and neither imports the other. The hub serves its
// authenticated routes ([API.Routes]) on the httpapi.Server beside userapi's, behind their
// rules; the webhooks ([API.Public]) check their own signatures. Every action is audited
// with the actor and wakes the controller, whose next reschedule carries it to the agents.
package opsapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Store is the part of the hub's store operations use.
type Store interface {
	GetCluster(ctx context.Context, name string) (store.Cluster, error)
	ListClusters(ctx context.Context) ([]store.Cluster, error)
	ClustersReporting(ctx context.Context, release string) ([]string, error)
	GetRecord(ctx context.Context, kind, key string) (store.Record, error)
	ListRecords(ctx context.Context, kind string) ([]store.Record, error)
	PutRecord(ctx context.Context, r store.Record, expect int64) (int64, error)
	DeleteRecord(ctx context.Context, kind, key string, expect int64) error
}

// Deps are what the operations need; Logger and Clock may be nil.
type Deps struct {
	Store Store
	// View is the controller's view: the fleet configuration in force.
	View func() controller.View
	// Record writes an audit record; it never fails the caller.
	Record func(ctx context.Context, e audit.Event)
	// Wake asks the controller to reschedule now.
	Wake func()
	// PollNow polls at once the sources whose URL and branch match, and returns their names
	// (webhooks).
	PollNow func(url, branch string) []string
	Plan    PlanDeps // POST /api/v1/plan (plan.go)
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Options are the operations' settings.
type Options struct {
	// WebhookSecrets are the secrets of the webhook endpoints by provider ("github",
	// "gitlab", "generic"); a provider without one answers 404.
	WebhookSecrets map[string]string
}

// API serves the operations.
type API struct {
	d Deps
	o Options
}

// New returns the operations API.
func New(d Deps, o Options) *API {
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	if d.Wake == nil {
		d.Wake = func() {}
	}
	if d.PollNow == nil {
		d.PollNow = func(string, string) []string { return nil }
	}
	return &API{d: d, o: o}
}

// Routes are the authenticated routes, for an httpapi.Server.
func (a *API) Routes() []httpapi.Route {
	return slices.Concat(a.rolloutRoutes(), a.gateRoutes(), a.syncRoutes(), a.planRoutes())
}

// Public are the routes that check their callers themselves, served without a bearer token.
func (a *API) Public() map[string]http.Handler { return a.hookRoutes() }

// record audits e as done by ctx's principal.
func (a *API) record(ctx context.Context, e audit.Event) { a.d.Record(ctx, httpapi.WithRole(ctx, e)) }

// readBody decodes the JSON body of a request, at most limit bytes, into v, refusing unknown
// fields; an empty body leaves v as it is. A refusal is answered here (413 over the limit,
// 400 otherwise), its message starting with what ("rollout action: ") and naming the shape
// wanted, and readBody returns false.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, v any, what, shape string) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%sbody over %d bytes", what, limit))
			return false
		}
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("%s%w", what, err))
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("%swant %s: %w", what, shape, err))
		return false
	}
	return true
}

// newID returns prefix and 16 random hex digits: unique and unguessable.
func newID(prefix string) (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new %sid: %w", prefix, err)
	}
	return prefix + hex.EncodeToString(b), nil
}
