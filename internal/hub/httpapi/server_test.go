package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// tokens authenticates a bearer token as the principal it names; "down" cannot be checked.
type tokens map[string]access.Principal

func (a tokens) Authenticate(_ context.Context, bearer string) (access.Principal, error) {
	if bearer == "down" {
		return access.Principal{}, errors.New("token store: connection refused")
	}
	if p, ok := a[bearer]; ok {
		return p, nil
	}
	return access.Principal{}, access.ErrUnauthenticated
}

var principals = tokens{
	"admin":      {Actor: "token:admin", Grants: []access.Grant{{Role: access.Admin}}},
	"deployer":   {Actor: "token:deployer", Grants: []access.Grant{{Role: access.Deployer}}},
	"deployer-a": {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}},
	"viewer-a":   {Actor: "token:viewer-a", Grants: []access.Grant{{Role: access.Viewer, Projects: []string{"team-a"}}}},
	"nobody":     {Actor: "token:nobody"},
}

var fleet = &v1alpha1.Fleet{Releases: []v1alpha1.Release{
	{Metadata: v1alpha1.ObjectMeta{Name: "a-web"}, Spec: v1alpha1.ReleaseSpec{Project: "team-a"}},
	{Metadata: v1alpha1.ObjectMeta{Name: "b-web"}, Spec: v1alpha1.ReleaseSpec{Project: "team-b"}},
}}

func call(h http.Handler, method, path, token, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), method, path, strings.NewReader(`{}`))
	req.RemoteAddr = remote
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errorOf(rec *httptest.ResponseRecorder) string {
	var e hubclient.APIError
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return e.Error
}

// TestRules: each route answers only principals that meet its rule, a refusal names who
// asked, with which role, and what the route needs; a deployer of one project may act on
// that project's releases alone; calls without a valid token get 401, and a token that cannot
// be checked 503; public routes need no token.
func TestRules(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httpapi.New(httpapi.Deps{Auth: principals, Fleet: func() *v1alpha1.Fleet { return fleet }}, httpapi.Options{})
	h := srv.Handler([]httpapi.Route{
		{Pattern: "GET /api/v1/whoami", Rule: httpapi.RuleSignedIn, Handler: ok},
		{Pattern: "GET /api/v1/status", Rule: httpapi.RuleView, Handler: ok},
		{Pattern: "GET /api/v1/audit/verify", Rule: httpapi.RuleViewFleet, Handler: ok},
		{Pattern: "POST /api/v1/releases/{release}/sync", Rule: httpapi.RuleDeployRelease, Handler: ok},
		{Pattern: "POST /api/v1/sync", Rule: httpapi.RuleDeployFleet, Handler: ok},
		{Pattern: "POST /api/v1/clusters", Rule: httpapi.RuleAdmin, Handler: ok},
	}, map[string]http.Handler{"GET /api/v1/login": ok})
	const no = http.StatusForbidden
	tests := []struct {
		method, path, token string
		status              int
		err                 string
	}{
		{"GET", "/api/v1/whoami", "nobody", http.StatusNoContent, ""},
		{"GET", "/api/v1/status", "nobody", no, "token:nobody () may not GET /api/v1/status: it needs viewer"},
		{"GET", "/api/v1/status", "viewer-a", http.StatusNoContent, ""},
		{"GET", "/api/v1/audit/verify", "viewer-a", no, "token:viewer-a (viewer:team-a) may not GET /api/v1/audit/verify: it needs viewer of every project"},
		{"GET", "/api/v1/audit/verify", "deployer", http.StatusNoContent, ""},
		{"POST", "/api/v1/releases/a-web/sync", "deployer-a", http.StatusNoContent, ""},
		{"POST", "/api/v1/releases/b-web/sync", "deployer-a", no, "oidc:alice (deployer:team-a) may not POST /api/v1/releases/b-web/sync: it needs deployer of the release's project"},
		{"POST", "/api/v1/releases/gone/sync", "deployer-a", no, "oidc:alice (deployer:team-a) may not POST /api/v1/releases/gone/sync: it needs deployer of the release's project"},
		{"POST", "/api/v1/releases/gone/sync", "deployer", http.StatusNoContent, ""},
		{"POST", "/api/v1/releases/a-web/sync", "viewer-a", no, "token:viewer-a (viewer:team-a) may not POST /api/v1/releases/a-web/sync: it needs deployer of the release's project"},
		{"POST", "/api/v1/sync", "deployer-a", no, "oidc:alice (deployer:team-a) may not POST /api/v1/sync: it needs deployer of every project"},
		{"POST", "/api/v1/sync", "deployer", http.StatusNoContent, ""},
		{"POST", "/api/v1/clusters", "deployer", no, "token:deployer (deployer) may not POST /api/v1/clusters: it needs admin"},
		{"POST", "/api/v1/clusters", "admin", http.StatusNoContent, ""},
		{"GET", "/api/v1/status", "", http.StatusUnauthorized, "a valid bearer token is required (see admin.token in the hub's data dir, `flotilla token create` and `flotilla login`)"},
		{"GET", "/api/v1/status", "down", http.StatusServiceUnavailable, "the hub cannot check tokens now: token store: connection refused"},
		{"GET", "/api/v1/login", "", http.StatusNoContent, ""},
	}
	for _, tt := range tests {
		rec := call(h, tt.method, tt.path, tt.token, "192.0.2.1:1")
		if rec.Code != tt.status || errorOf(rec) != tt.err {
			t.Errorf("%s %s as %q: %d %q, want %d %q", tt.method, tt.path, tt.token, rec.Code, errorOf(rec), tt.status, tt.err)
		}
	}
}

// TestChangingCallsAreAudited: every changing call, refused ones included, leaves an
// api.call record naming the actor, its role, the method, path, status and client address;
// reads leave none.
func TestChangingCallsAreAudited(t *testing.T) {
	t.Parallel()
	var got []audit.Event
	record := func(_ context.Context, e audit.Event) { got = append(got, e) }
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	srv := httpapi.New(httpapi.Deps{Auth: principals, Fleet: func() *v1alpha1.Fleet { return fleet }, Record: record}, httpapi.Options{})
	h := srv.Handler([]httpapi.Route{
		{Pattern: "POST /api/v1/clusters/{name}/suspend", Rule: httpapi.RuleDeployFleet, Handler: ok},
		{Pattern: "GET /api/v1/status", Rule: httpapi.RuleView, Handler: ok},
	})
	call(h, "GET", "/api/v1/status", "deployer", "192.0.2.1:1")
	call(h, "POST", "/api/v1/clusters/a1/suspend", "deployer", "192.0.2.1:1")
	call(h, "POST", "/api/v1/clusters/a1/suspend", "deployer-a", "[2001:db8::1]:443")
	event := func(actor, role, remote string, status int) audit.Event {
		return audit.Event{Action: "api.call", Actor: actor, Cluster: "a1", Detail: map[string]any{
			"method": "POST", "path": "/api/v1/clusters/a1/suspend", "status": status, "remote": remote, "userAgent": "", "role": role,
		}}
	}
	want := []audit.Event{
		event("token:deployer", "deployer", "192.0.2.1", http.StatusAccepted),
		event("oidc:alice", "deployer:team-a", "2001:db8::1", http.StatusForbidden),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit records (-want +got):\n%s", diff)
	}
}

// TestMutationRateLimit: a principal past its burst of changing calls gets 429 with
// Retry-After and a message naming the limit and the flags that set it, before the handler
// runs; other principals and reads are untouched, and the bucket refills with the clock.
func TestMutationRateLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC))
	served := 0
	count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++; w.WriteHeader(http.StatusAccepted) })
	srv := httpapi.New(httpapi.Deps{
		Auth: tokens{
			"alice": {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer}}},
			"bob":   {Actor: "oidc:bob", Grants: []access.Grant{{Role: access.Deployer}}},
		},
		Fleet: func() *v1alpha1.Fleet { return nil }, Clock: clk,
	}, httpapi.Options{MutationQPS: 0.5, MutationBurst: 3})
	h := srv.Handler([]httpapi.Route{
		{Pattern: "POST /api/v1/sync", Rule: httpapi.RuleDeployFleet, Handler: count},
		{Pattern: "GET /api/v1/freezes", Rule: httpapi.RuleView, Handler: count},
	})
	const refusal = "rate limit: oidc:alice made more than 3 changing calls at once (0.5 a second sustained; hub flags --api-burst, --api-qps): retry in 2 s"
	steps := []struct {
		name, method, path, token string
		advance                   time.Duration
		status                    int
		retryAfter, want          string
	}{
		{"alice 1", "POST", "/api/v1/sync", "alice", 0, http.StatusAccepted, "", ""},
		{"alice 2", "POST", "/api/v1/sync", "alice", 0, http.StatusAccepted, "", ""},
		{"alice 3", "POST", "/api/v1/sync", "alice", 0, http.StatusAccepted, "", ""},
		{"alice 4: past the burst", "POST", "/api/v1/sync", "alice", 0, http.StatusTooManyRequests, "2", refusal},
		{"alice again: a refusal costs no token", "POST", "/api/v1/sync", "alice", 0, http.StatusTooManyRequests, "2", refusal},
		{"alice reads", "GET", "/api/v1/freezes", "alice", 0, http.StatusAccepted, "", ""},
		{"bob has his own bucket", "POST", "/api/v1/sync", "bob", 0, http.StatusAccepted, "", ""},
		{"alice after 2 s", "POST", "/api/v1/sync", "alice", 2 * time.Second, http.StatusAccepted, "", ""},
		{"alice right after", "POST", "/api/v1/sync", "alice", 0, http.StatusTooManyRequests, "2", refusal},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		rec := call(h, s.method, s.path, s.token, "192.0.2.1:1")
		if rec.Code != s.status || errorOf(rec) != s.want || rec.Header().Get("Retry-After") != s.retryAfter {
			t.Errorf("%s: status %d %q Retry-After %q, want %d %q %q", s.name, rec.Code, errorOf(rec), rec.Header().Get("Retry-After"), s.status, s.want, s.retryAfter)
		}
	}
	if served != 6 {
		t.Errorf("the handlers ran %d times, want 6 (no refused call reaches them)", served)
	}
}

// TestVisibleProjects: a scoped principal keeps the entries of its own projects only; the
// whole fleet's scope keeps them all, and the zero scope none.
func TestVisibleProjects(t *testing.T) {
	t.Parallel()
	fl := &v1alpha1.Fleet{Projects: []v1alpha1.Project{{Metadata: v1alpha1.ObjectMeta{Name: "team-a"}}, {Metadata: v1alpha1.ObjectMeta{Name: "team-b"}}}}
	byProject := map[string]int{"team-a": 1, "team-b": 2}
	for _, tt := range []struct {
		name  string
		scope access.Scope
		want  map[string]int
	}{
		{"viewer of team-a", access.NewScope(principals["viewer-a"], fl), map[string]int{"team-a": 1}},
		{"everything", access.Everything(), byProject},
		{"no scope", access.Scope{}, nil},
	} {
		got := httpapi.VisibleProjects(httpapi.WithScope(t.Context(), tt.scope), byProject)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
