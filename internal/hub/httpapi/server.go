package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// Defaults of the limit on each principal's changing calls (Options.MutationQPS and
// MutationBurst): a person or a CI job syncs, freezes or plans a few times a minute; a
// script that loops on POST /api/v1/sync is refused after 30 calls, then gets 2 a second.
const (
	DefaultMutationQPS   = 2.0
	DefaultMutationBurst = 30
	// maxLimitKeys bounds the buckets kept; past it, new principals share one bucket.
	maxLimitKeys = 10000
)

// Authenticator turns a request's bearer token into a principal (access.Authenticator).
type Authenticator interface {
	// Authenticate returns the token's principal; access.ErrUnauthenticated (possibly
	// wrapped with why) for a token that is not valid, another error when the token could
	// not be checked.
	Authenticate(ctx context.Context, bearer string) (access.Principal, error)
}

// Deps are what a Server needs. Auth and Fleet are required; Record, Clock (then the wall
// clock) and Logger may be nil.
type Deps struct {
	Auth Authenticator
	// Fleet returns the fleet configuration in force (nil before one is loaded): the
	// principals' scopes, and the projects of releases for RuleDeployRelease.
	Fleet func() *v1alpha1.Fleet
	// Record writes an audit record; it never fails the caller.
	Record func(ctx context.Context, e audit.Event)
	Clock  clock.Clock
	Logger *slog.Logger
}

// Options are a Server's settings.
type Options struct {
	// MutationQPS and MutationBurst are each principal's token bucket of changing calls;
	// 0: DefaultMutationQPS, DefaultMutationBurst.
	MutationQPS   float64
	MutationBurst int
}

// Server is the front door of the authenticated routes: it serves each Route behind bearer
// authentication and its Rule, audits every changing call and limits each principal's rate
// of them.
type Server struct {
	d           Deps
	mutations   *keyrate.Buckets[string]
	mutationQPS float64
	burst       int
}

// New returns a Server.
func New(d Deps, o Options) *Server {
	d.Clock = clock.Or(d.Clock)
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Record == nil {
		d.Record = func(context.Context, audit.Event) {}
	}
	if o.MutationQPS <= 0 {
		o.MutationQPS = DefaultMutationQPS
	}
	if o.MutationBurst <= 0 {
		o.MutationBurst = DefaultMutationBurst
	}
	return &Server{
		d:           d,
		mutations:   keyrate.New[string](d.Clock, o.MutationQPS, o.MutationBurst, maxLimitKeys),
		mutationQPS: o.MutationQPS, burst: o.MutationBurst,
	}
}

// Handler serves routes under /api/, each behind its rule, after authenticating the caller
// (401 without a valid bearer token), recording every changing call in the audit trail
// (refused ones too) and answering 429 to a principal past its rate of them; and public, by
// pattern, without a token: each checks its caller itself (a webhook the provider's
// signature) or needs none (sign-in, the dashboard's pages). A pattern served twice panics,
// as http.ServeMux does.
func (s *Server) Handler(routes []Route, public ...map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.Handle(rt.Pattern, s.guard(rt))
	}
	root := http.NewServeMux()
	for _, m := range public {
		for pattern, h := range m {
			root.Handle(pattern, h)
		}
	}
	root.Handle("/api/", s.authenticate(s.auditCalls(s.limitMutations(mux))))
	return root
}

// authenticate puts the bearer token's principal, and its scope of the fleet in force, in
// the request's context; 401 without one.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, err := s.d.Auth.Authenticate(r.Context(), strings.TrimSpace(bearer))
		if err != nil && !errors.Is(err, access.ErrUnauthenticated) {
			// The token could not be checked (the store is down): not the caller's fault.
			s.d.Logger.Warn("authentication failed", "error", err)
			WriteError(w, http.StatusServiceUnavailable, fmt.Errorf("the hub cannot check tokens now: %w", err))
			return
		}
		if err != nil {
			msg := "a valid bearer token is required (see admin.token in the hub's data dir, `flotilla token create` and `flotilla login`)"
			if err != access.ErrUnauthenticated { //nolint:errorlint // only the bare error says nothing more
				msg += ": " + strings.ReplaceAll(err.Error(), "\n", ": ")
			}
			WriteError(w, http.StatusUnauthorized, errors.New(msg))
			return
		}
		ctx := access.WithPrincipal(r.Context(), p)
		ctx = WithScope(ctx, access.NewScope(p, s.d.Fleet()))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// guard answers 403 unless the principal meets rt's rule.
func (s *Server) guard(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := access.FromContext(r.Context())
		ok := false
		switch rt.Rule {
		case RuleSignedIn:
			ok = true
		case RuleView:
			ok = len(p.Grants) > 0
		case RuleViewFleet:
			ok = p.CanEverywhere(access.Viewer)
		case RuleDeployRelease:
			ok = p.CanEverywhere(access.Deployer)
			if project, found := projectOf(s.d.Fleet(), r.PathValue("release")); !ok && found {
				ok = p.Can(access.Deployer, project)
			}
		case RuleDeployFleet:
			ok = p.CanEverywhere(access.Deployer)
		case RuleAdmin:
			ok = p.CanEverywhere(access.Admin)
		}
		if !ok {
			WriteError(w, http.StatusForbidden, fmt.Errorf("%s (%s) may not %s %s: it needs %s", p.Actor, p.Role(), r.Method, r.URL.Path, rt.Rule))
			return
		}
		rt.Handler.ServeHTTP(w, r)
	})
}

// projectOf returns the project of the named release in fleet.
func projectOf(fleet *v1alpha1.Fleet, release string) (string, bool) {
	if fleet == nil || release == "" {
		return "", false
	}
	for _, r := range fleet.Releases {
		if r.Metadata.Name == release {
			return r.Spec.Project, true
		}
	}
	return "", false
}

// auditCalls records every authenticated call that changes something (any method but GET
// and HEAD), whether it succeeded or not: the request-level trail beside the records of what
// changed.
func (s *Server) auditCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		remote := r.RemoteAddr
		if host, _, err := net.SplitHostPort(remote); err == nil {
			remote = host
		}
		s.d.Record(r.Context(), WithRole(r.Context(), audit.Event{Action: "api.call", Cluster: r.PathValue("name"), Detail: map[string]any{
			"method": r.Method, "path": r.URL.Path, "status": sw.status, "remote": remote, "userAgent": r.UserAgent(),
		}}))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limitMutations answers 429 with Retry-After to a principal past its bucket of changing
// calls (every method but GET and HEAD: sync, freeze, suspend, rollout actions, plan, token),
// before the route's handler runs: each such call writes records and audit entries and
// reschedules, and a plan renders.
func (s *Server) limitMutations(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		p, _ := access.FromContext(r.Context())
		if wait, ok := keyrate.Take(s.d.Clock.Now(), s.mutations.Get(p.Actor)); !ok {
			secs := RetryAfter(w, wait)
			WriteError(w, http.StatusTooManyRequests, fmt.Errorf("rate limit: %s made more than %d changing calls at once (%g a second sustained; hub flags --api-burst, --api-qps): retry in %d s",
				p.Actor, s.burst, s.mutationQPS, secs))
			return
		}
		next.ServeHTTP(w, r)
	})
}
