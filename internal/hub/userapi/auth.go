package userapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// Authenticator turns a request's bearer token into a principal (access.Authenticator).
type Authenticator interface {
	Authenticate(ctx context.Context, bearer string) (access.Principal, error)
}

// rule is what a route asks of the principal. Every route has one: Handler registers routes
// only through a table of (pattern, rule, handler), and the role matrix test walks Routes.
type rule int

const (
	// ruleSignedIn: any principal (whoami).
	ruleSignedIn rule = iota
	// ruleView: a viewer in at least one project; the handler shows only what the
	// principal's scope holds, and answers 404 for a named cluster or release outside it.
	ruleView
	// ruleViewFleet: a viewer in every project (fleet-wide views such as the audit log's
	// verification).
	ruleViewFleet
	// ruleAdmin: an admin.
	ruleAdmin
)

func (r rule) String() string {
	return [...]string{"signed in", "viewer", "viewer of every project", "admin"}[r]
}

// route is one user API route.
type route struct {
	pattern string
	rule    rule
	h       http.Handler
}

// routes are every /api/ route but the unauthenticated login information.
func (api *API) routes() []route {
	f := func(h http.HandlerFunc) http.Handler { return h }
	return append(api.extraRoutes(), []route{
		{"GET /api/v1/whoami", ruleSignedIn, f(api.whoami)},
		{"POST /api/v1/clusters", ruleAdmin, f(api.addCluster)},
		{"GET /api/v1/clusters", ruleView, f(api.listClusters)},
		{"GET /api/v1/clusters/{name}", ruleView, f(api.getCluster)},
		{"GET /api/v1/clusters/{name}/releases/{release}", ruleView, api.inScope(f(api.assignmentDetail))},
		{"PATCH /api/v1/clusters/{name}/labels", ruleAdmin, f(api.labelCluster)},
		{"DELETE /api/v1/clusters/{name}", ruleAdmin, f(api.removeCluster)},
		{"POST /api/v1/clusters/{name}/token", ruleAdmin, f(api.newToken)},
		{"POST /api/v1/clusters/{name}/rotate", ruleAdmin, f(api.rotateCluster)},
		{"GET /api/v1/releases", ruleView, f(api.listReleases)},
		{"GET /api/v1/sources", ruleView, f(api.listSources)},
		{"GET /api/v1/status", ruleView, f(api.status)},
		{"GET /api/v1/skew", ruleView, f(api.skew)},
		{"GET /api/v1/drift", ruleView, f(api.drift)},
		{"GET /api/v1/audit", ruleView, f(api.listAudit)},
		{"GET /api/v1/audit/verify", ruleViewFleet, f(api.verifyAudit)},
		{"GET /api/v1/dashboard/fleet", ruleView, f(api.dashboardFleetDoc)},
		{"GET /api/v1/tokens", ruleAdmin, f(api.listUserTokens)},
		{"POST /api/v1/tokens", ruleAdmin, f(api.createUserToken)},
		{"DELETE /api/v1/tokens/{name}", ruleAdmin, f(api.revokeUserToken)},
		{"POST /api/v1/tokens/{name}/rotate", ruleAdmin, f(api.rotateUserToken)},
	}...)
}

// Routes are the patterns of every authenticated route with the rule it asks of the
// principal, for tests and docs.
func (api *API) Routes() map[string]string {
	out := map[string]string{}
	for _, rt := range api.routes() {
		out[rt.pattern] = rt.rule.String()
	}
	for _, rt := range api.d.Extra {
		out[rt.Pattern] = rt.Rule.String()
	}
	return out
}

// authenticate puts the bearer token's principal, and its scope of the fleet in force, in
// the request's context; 401 without one.
func (api *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, err := api.auth.Authenticate(r.Context(), strings.TrimSpace(bearer))
		if err != nil && !errors.Is(err, access.ErrUnauthenticated) {
			// The token could not be checked (the store is down): not the caller's fault.
			api.d.Logger.Warn("authentication failed", "error", err)
			writeError(w, http.StatusServiceUnavailable, fmt.Errorf("the hub cannot check tokens now: %w", err))
			return
		}
		if err != nil {
			msg := "a valid bearer token is required (see admin.token in the hub's data dir, `flotilla token create` and `flotilla login`)"
			if err != access.ErrUnauthenticated { //nolint:errorlint // only the bare error says nothing more
				msg += ": " + strings.ReplaceAll(err.Error(), "\n", ": ")
			}
			writeError(w, http.StatusUnauthorized, errors.New(msg))
			return
		}
		ctx := access.WithPrincipal(r.Context(), p)
		ctx = withScope(ctx, access.NewScope(p, api.d.View().Fleet))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// guard answers 403 unless the principal meets rt's rule.
func guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := access.FromContext(r.Context())
		ok := false
		switch rt.rule {
		case ruleSignedIn:
			ok = true
		case ruleView:
			ok = len(p.Grants) > 0
		case ruleViewFleet:
			ok = p.CanEverywhere(access.Viewer)
		case ruleAdmin:
			ok = p.CanEverywhere(access.Admin)
		}
		if !ok {
			writeError(w, http.StatusForbidden, fmt.Errorf("%s (%s) may not %s %s: it needs %s", p.Actor, p.Role(), r.Method, r.URL.Path, rt.rule))
			return
		}
		rt.h.ServeHTTP(w, r)
	})
}

type scopeKey struct{}

func withScope(ctx context.Context, s access.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf is the scope ctx carries; none: the zero scope, which sees nothing. The hub's own
// callers (notifications, the shared dashboard document) pass access.Everything().
func scopeOf(ctx context.Context) access.Scope {
	s, _ := ctx.Value(scopeKey{}).(access.Scope)
	return s
}

// visibleCluster reports whether ctx's scope holds cluster c.
func visibleCluster(ctx context.Context, c store.Cluster) bool { return scopeOf(ctx).Cluster(c.Labels) }

// inScope answers 404, as for an unknown one, for a {name} cluster or {release} outside the
// principal's scope.
func (api *API) inScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := scopeOf(r.Context())
		if rel := r.PathValue("release"); rel != "" && !s.Release(rel) {
			writeError(w, http.StatusNotFound, fmt.Errorf("release %q is not on cluster %q", rel, r.PathValue("name")))
			return
		}
		if name := r.PathValue("name"); name != "" && !s.All() {
			c, err := api.d.Store.GetCluster(r.Context(), name)
			if err == nil && !s.Cluster(c.Labels) {
				err = store.ErrNotFound
			}
			if err != nil {
				writeStoreError(w, err, name)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// actor is who the audit trail names for ctx's request: "token:NAME" or "oidc:SUBJECT".
func actor(ctx context.Context) string {
	if p, ok := access.FromContext(ctx); ok {
		return p.Actor
	}
	return "hub"
}

// record writes e as done by ctx's principal: its actor, and the role it used in the
// detail.
func (api *API) record(ctx context.Context, e audit.Event) {
	p, _ := access.FromContext(ctx)
	e.Actor = actor(ctx)
	detail := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail["role"] = p.Role()
	e.Detail = detail
	api.d.Record(ctx, e)
}
