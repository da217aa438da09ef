package hub

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"slices"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/agekeys"
	"github.com/flotilla/flotilla/internal/hub/bundleapi"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/opsapi"
	"github.com/flotilla/flotilla/internal/hub/userapi"
	"github.com/flotilla/flotilla/internal/sqlitedb"
)

// newUserAPIs wires the user-facing APIs and returns the user API, which the notifications and
// the dashboard's refreshes call, and the handler of the API endpoint. The user API gets the
// store, the last-seen times and decoded desired states it shares with the agent API, the
// controller's view, the audit log, and what a cluster's addition, relabelling or removal
// sets off here; the operations, the air-gapped bundles and the age keys get theirs. The hub
// mounts the routes of all four, peers, on one httpapi.Server, which decides who may call
// them (the bootstrap admin token, the named tokens, OIDC) and audits and rate-limits their
// changing calls.
func (h *Hub) newUserAPIs(ctx context.Context) (*userapi.API, http.Handler, error) {
	o := h.opts
	tokens, err := h.openTokens(ctx)
	if err != nil {
		return nil, nil, err
	}
	auth := &access.Authenticator{Bootstrap: h.bootstrap, Tokens: tokens}
	uo := userapi.Options{
		AgentURL: h.AgentURL(), CAFingerprint: h.ca.Fingerprint(),
		TokenTTL: o.TokenTTL, UnreachableAfter: o.UnreachableAfter,
	}
	var device userapi.DeviceFlow
	if o.OIDC.Issuer != "" {
		if auth.OIDC, err = access.NewOIDC(o.OIDC); err != nil {
			return nil, nil, err
		}
		uo.OIDCIssuer, uo.OIDCClientID, uo.OIDCScopes = o.OIDC.Issuer, o.OIDC.ClientID, auth.OIDC.Scopes()
		device = auth.OIDC
	}
	user := userapi.New(userapi.Deps{
		Store: h.store, Seen: h.seen, Desired: h.desired, View: h.ctrl.View, Audit: h.audit,
		Record: h.record, ClustersChanged: h.kickController, ClusterRelabelled: h.ctrl.Relabelled, ClusterRemoved: h.forgetCluster,
		CertificatesRevoked: h.certificatesRevoked, Clock: h.clock, Logger: h.log, Tokens: tokens, Device: device,
	}, uo)
	ops := opsapi.New(opsapi.Deps{
		Store: h.store, View: h.ctrl.View, Record: h.record, Wake: h.kickController,
		PollNow: h.ctrl.PollNow, Clock: h.clock, Logger: h.log,
		Plan: opsapi.PlanDeps{Store: h.store, Artifacts: h.artifacts, EnsureArtifact: h.repl.EnsureArtifact, Poller: h.poller,
			Fleet: o.Fleet, FleetBranch: o.FleetBranch, FleetPath: o.FleetPath, WorkDir: o.DataDir,
			Schedule: h.scheduleOptions()},
	}, opsapi.Options{WebhookSecrets: o.WebhookSecrets})
	// Offline bundles and reports for air-gapped sites (docs/airgap.md).
	bundles := bundleapi.New(bundleapi.Deps{
		Store: h.store, Artifacts: h.artifacts, EnsureArtifact: h.repl.EnsureArtifact, CA: h.ca,
		Ingest: h.agent.IngestReports, Record: h.record, Clock: h.clock, Logger: h.log,
	})
	keys := agekeys.NewAPI(h.store, o.RecoveryRecipients)
	front := httpapi.New(httpapi.Deps{
		Auth: auth, Fleet: func() *v1alpha1.Fleet { return h.ctrl.View().Fleet },
		Record: h.record, Clock: h.clock, Logger: h.log,
	}, httpapi.Options{MutationQPS: o.APIQPS, MutationBurst: o.APIBurst})
	routes := slices.Concat(user.Routes(), ops.Routes(), bundles.Routes(), keys.Routes())
	return user, front.Handler(routes, user.Public(), ops.Public()), nil
}

// openTokens opens the named user tokens in the store's database, so that replicas sharing
// PostgreSQL share them; a store that offers no database (a test's wrapper) gets a SQLite
// file of its own in the data dir.
func (h *Hub) openTokens(ctx context.Context) (*access.Tokens, error) {
	if st, ok := h.store.(interface {
		DB() *sql.DB
		ReadDB() *sql.DB
	}); ok {
		return access.OpenTokens(ctx, st.DB(), st.ReadDB(), h.clock.Now)
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(h.opts.DataDir, "tokens.db"), nil, nil)
	if err != nil {
		return nil, err
	}
	return access.OpenTokens(ctx, db.W, db.R, h.clock.Now)
}

// forgetCluster drops what this replica keeps in memory of a cluster removed from the store
// (which revoked its certificates): cached certificate checks, open watch streams, its
// last-seen time and heartbeat state.
func (h *Hub) forgetCluster(name string) {
	h.auth.ForgetCluster(name)
	h.watchers.CloseCluster(name)
	h.seen.Forget(name)
	h.agent.ForgetCluster(name)
}

// dashboardChanged tells the dashboard that the fleet's status changed (a report ingested, a
// desired state written). Nothing before the user API exists.
func (h *Hub) dashboardChanged() {
	if h.user != nil {
		h.user.DashboardChanged()
	}
}

// certificatesRevoked follows `cluster rotate`: cached checks of the cluster's certificates
// and its open watch streams end, here and (through the fan-out) on the other replicas. Its
// last-seen time and history stay.
func (h *Hub) certificatesRevoked(name string) {
	h.auth.ForgetCluster(name)
	h.watchers.CloseCluster(name)
}
