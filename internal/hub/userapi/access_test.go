package userapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// accessFleet is a hub with two team projects beside the platform's: team-a's clusters have
// team=a, team-b's team=b; base (platform) runs on both.
type accessFleet struct {
	srv     *httptest.Server
	log     *audit.Log
	tokens  *access.Tokens
	secrets map[string]string // principal name -> bearer token
	relabel []string          // actors ClusterRelabelled was told
}

const accessBootstrap = "bootstrap-admin-token-0123456789abcdef"

func newAccessFleet(t *testing.T) *accessFleet {
	t.Helper()
	ctx := t.Context()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log, err := audit.Open(ctx, filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	now := time.Now()
	assign := func(cluster string, labels map[string]string, releases ...string) {
		t.Helper()
		must(t, st.AddCluster(ctx, store.Cluster{Name: cluster, Labels: labels, CreatedAt: now}))
		var as []desired.Assignment
		var sts []store.AssignmentStatus
		for _, r := range releases {
			as = append(as, desired.Assignment{Release: r, Source: r + "-src", Revision: "main@sha1:abc", Digest: "sha256:" + r, Path: r})
			report := &agentv1.Report{Seq: 1, ProducedAt: timestamppb.New(now)}
			sts = append(sts, agentapi.StatusFromProto(cluster, report, &agentv1.AssignmentStatus{
				Release: r, Generation: 1, Revision: "main@sha1:abc", Digest: "sha256:" + r, Phase: "Ready", Objects: 1, Drifted: true,
				Drift: []*agentv1.DriftedObject{{Object: "configmap/" + r + "-settings", Namespace: r, Paths: []string{".data.x"}}},
			}))
			must(t, st.PutSourceStatus(ctx, store.SourceStatus{Name: r + "-src", URL: "https://git.example.com/" + r, Revision: "main@sha1:abc", CheckedAt: now}))
		}
		doc, err := desired.Encode(desired.Document{Assignments: as})
		must(t, err)
		_, _, err = st.PutDesiredState(ctx, cluster, doc)
		must(t, err)
		_, err = st.IngestReport(ctx, cluster, 1, sts)
		must(t, err)
		for _, r := range releases {
			_, err := log.Append(ctx, audit.Event{Actor: "agent:" + cluster, Action: audit.ActionApply, Cluster: cluster, Release: r})
			must(t, err)
		}
	}
	assign("a1", map[string]string{"team": "a"}, "base", "a-web")
	assign("b1", map[string]string{"team": "b"}, "base", "b-web")
	must(t, st.AddCluster(ctx, store.Cluster{Name: "b2", Labels: map[string]string{"team": "b"}, CreatedAt: now}))
	_, err = log.Append(ctx, audit.Event{Actor: "hub", Action: "fleet.revision", Detail: map[string]any{"revision": "r1"}})
	must(t, err)

	rel := func(name, project string) v1alpha1.Release {
		return v1alpha1.Release{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ReleaseSpec{Project: project, Source: name + "-src"}}
	}
	proj := func(name, team string) v1alpha1.Project {
		return v1alpha1.Project{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.ProjectSpec{ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"team": team}}}}
	}
	fleet := &v1alpha1.Fleet{
		Releases: []v1alpha1.Release{rel("base", ""), rel("a-web", "team-a"), rel("b-web", "team-b")},
		Projects: []v1alpha1.Project{proj("team-a", "a"), proj("team-b", "b")},
	}
	bootstrap, err := access.NewBootstrap(accessBootstrap)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := access.OpenTokens(ctx, st.DB(), st.ReadDB(), time.Now)
	must(t, err)
	f := &accessFleet{log: log, tokens: tokens, secrets: map[string]string{"admin": accessBootstrap, "bad": "flt_not-a-token"}}
	for name, g := range map[string]access.Grant{
		"viewer-a":   {Role: access.Viewer, Projects: []string{"team-a"}},
		"deployer-a": {Role: access.Deployer, Projects: []string{"team-a"}},
		"viewer-all": {Role: access.Viewer},
		"spare":      {Role: access.Viewer},
	} {
		_, secret, err := tokens.Create(ctx, access.Token{Name: name, Grant: g})
		must(t, err)
		f.secrets[name] = secret
	}
	api := New(Deps{
		Store: st, Seen: neverSeen{}, Desired: desired.NewCache(), Audit: log,
		View: func() controller.View {
			return controller.View{Fleet: fleet, Revision: "r1", Problems: []schedule.Problem{
				{Project: "team-a", Message: "tenant fleet of team-a rejected: bad yaml"},
				{Project: "team-b", Message: "tenant fleet of team-b rejected: bad yaml"},
				{Release: "b-web", Cluster: "b1", Message: "b-web is outside its project"},
			}}
		},
		Record:            func(ctx context.Context, e audit.Event) { _, _ = log.Append(ctx, e) },
		ClusterRelabelled: func(_, actor string) { f.relabel = append(f.relabel, actor) },
		Tokens:            tokens,
	}, Options{AgentURL: "https://agents", CAFingerprint: strings.Repeat("ab", 32), TokenTTL: time.Hour, UnreachableAfter: time.Minute})
	f.srv = httptest.NewTLSServer(serve(api, &access.Authenticator{Bootstrap: bootstrap, Tokens: tokens}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *accessFleet) call(t *testing.T, who, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, strings.NewReader(body))
	must(t, err)
	if s := f.secrets[who]; s != "" {
		req.Header.Set("Authorization", "Bearer "+s)
	}
	resp, err := f.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoleMatrix calls every user API route as every kind of principal. The routes come from
// the API itself: a route added without a row here fails the test. A viewer or deployer of
// team-a never gets a byte of team-b's (its release b-web, its clusters b1 and b2, its
// source) from any route, the dashboard's fleet document included.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	f := newAccessFleet(t)
	principals := []string{"none", "bad", "viewer-a", "deployer-a", "viewer-all", "admin"} // admin last: it changes things
	// want: the status per principal, in the order above. A row may call a route more than
	// once (a path in and out of team-a's scope).
	type call struct {
		method, path, body string
		want               [6]int
	}
	const (
		un = http.StatusUnauthorized
		no = http.StatusForbidden
		nf = http.StatusNotFound
		ok = http.StatusOK
	)
	view := [6]int{un, un, ok, ok, ok, ok}
	admin := func(code int) [6]int { return [6]int{un, un, no, no, no, code} }
	rows := map[string][]call{
		"GET /api/v1/whoami":    {{"GET", "/api/v1/whoami", "", view}},
		"POST /api/v1/clusters": {{"POST", "/api/v1/clusters", `{"name":"c9","labels":{"team":"b"}}`, admin(http.StatusCreated)}},
		"GET /api/v1/clusters":  {{"GET", "/api/v1/clusters", "", view}},
		"GET /api/v1/clusters/{name}": {
			{"GET", "/api/v1/clusters/a1", "", view},
			{"GET", "/api/v1/clusters/b1", "", [6]int{un, un, nf, nf, ok, ok}},
		},
		"GET /api/v1/clusters/{name}/releases/{release}": {
			{"GET", "/api/v1/clusters/a1/releases/a-web", "", view},
			{"GET", "/api/v1/clusters/a1/releases/base", "", [6]int{un, un, nf, nf, ok, ok}},
			{"GET", "/api/v1/clusters/b1/releases/b-web", "", [6]int{un, un, nf, nf, ok, ok}},
		},
		"PATCH /api/v1/clusters/{name}/labels": {{"PATCH", "/api/v1/clusters/a1/labels", `{"labels":{"tier":"1"}}`, admin(ok)}},
		"DELETE /api/v1/clusters/{name}":       {{"DELETE", "/api/v1/clusters/b2", "", admin(http.StatusNoContent)}},
		"POST /api/v1/clusters/{name}/token":   {{"POST", "/api/v1/clusters/a1/token", "", admin(ok)}},
		"POST /api/v1/clusters/{name}/rotate":  {{"POST", "/api/v1/clusters/a1/rotate", "", admin(ok)}},
		"GET /api/v1/releases":                 {{"GET", "/api/v1/releases", "", view}},
		"GET /api/v1/sources":                  {{"GET", "/api/v1/sources", "", view}},
		"GET /api/v1/status": {
			{"GET", "/api/v1/status", "", view},
			{"GET", "/api/v1/status?release=b-web", "", [6]int{un, un, nf, nf, ok, ok}},
			{"GET", "/api/v1/status?cluster=b1", "", [6]int{un, un, nf, nf, ok, ok}},
		},
		"GET /api/v1/skew":  {{"GET", "/api/v1/skew", "", view}, {"GET", "/api/v1/skew?release=b-web", "", [6]int{un, un, nf, nf, ok, ok}}},
		"GET /api/v1/drift": {{"GET", "/api/v1/drift", "", view}, {"GET", "/api/v1/drift?cluster=b1", "", [6]int{un, un, nf, nf, ok, ok}}},
		"GET /api/v1/audit": {
			{"GET", "/api/v1/audit", "", view},
			{"GET", "/api/v1/audit?format=jsonl", "", view},
			{"GET", "/api/v1/audit?cluster=b1", "", view}, // empty for team-a
		},
		"GET /api/v1/audit/verify":          {{"GET", "/api/v1/audit/verify", "", [6]int{un, un, no, no, ok, ok}}},
		"GET /api/v1/dashboard/fleet":       {{"GET", "/api/v1/dashboard/fleet", "", view}},
		"GET /api/v1/tokens":                {{"GET", "/api/v1/tokens", "", admin(ok)}},
		"POST /api/v1/tokens":               {{"POST", "/api/v1/tokens", `{"name":"ci","role":"deployer","projects":["team-a"]}`, admin(http.StatusCreated)}},
		"DELETE /api/v1/tokens/{name}":      {{"DELETE", "/api/v1/tokens/spare", "", admin(http.StatusNoContent)}},
		"POST /api/v1/tokens/{name}/rotate": {{"POST", "/api/v1/tokens/ci/rotate", "", admin(ok)}},
	}
	routes := slices.Sorted(func(yield func(string) bool) {
		for _, rt := range (&API{}).Routes() {
			if !yield(rt.Pattern) {
				return
			}
		}
	})
	for _, pattern := range routes {
		if _, ok := rows[pattern]; !ok {
			t.Errorf("route %s has no row in the role matrix: add one", pattern)
		}
	}
	for pattern := range rows {
		if !slices.Contains(routes, pattern) {
			t.Errorf("the role matrix has a row for %s, which is not a route", pattern)
		}
	}
	// team-b's names, which team-a's principals must never see.
	leaks := []string{`"b1"`, `"b2"`, "b-web", "team-b", `"c9"`, "fleet.revision"}
	for _, pattern := range routes {
		for _, c := range rows[pattern] {
			for i, who := range principals {
				code, body := f.call(t, who, c.method, c.path, c.body)
				if code != c.want[i] {
					t.Errorf("%s %s as %s: %d, want %d: %s", c.method, c.path, who, code, c.want[i], body)
					continue
				}
				if (who == "viewer-a" || who == "deployer-a") && code == ok {
					for _, leak := range leaks {
						if strings.Contains(body, leak) {
							t.Errorf("%s %s as %s shows %s: %s", c.method, c.path, who, leak, body)
						}
					}
				}
			}
		}
	}

	t.Run("team-a sees its own", func(t *testing.T) {
		_, body := f.call(t, "viewer-a", "GET", "/api/v1/dashboard/fleet", "")
		for _, want := range []string{`"a1"`, "a-web"} {
			if !strings.Contains(body, want) {
				t.Errorf("dashboard fleet of viewer-a lacks %s: %s", want, body)
			}
		}
		_, body = f.call(t, "viewer-a", "GET", "/api/v1/status", "")
		if !strings.Contains(body, "tenant fleet of team-a rejected") {
			t.Errorf("status of viewer-a lacks its project's problem: %s", body)
		}
		_, body = f.call(t, "viewer-a", "GET", "/api/v1/drift", "")
		if !strings.Contains(body, "a-web-settings") {
			t.Errorf("drift of viewer-a lacks a-web's: %s", body)
		}
		_, body = f.call(t, "viewer-a", "GET", "/api/v1/audit", "")
		var recs []hubclient.AuditRecord
		must(t, json.Unmarshal([]byte(body), &recs))
		if len(recs) == 0 || slices.ContainsFunc(recs, func(r hubclient.AuditRecord) bool { return r.Cluster != "a1" }) {
			t.Errorf("audit of viewer-a: %s", body)
		}
	})

	t.Run("a scoped dashboard document is a snapshot with an ETag", func(t *testing.T) {
		get := func(etag string) (int, string) {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), "GET", f.srv.URL+"/api/v1/dashboard/fleet", nil)
			req.Header.Set("Authorization", "Bearer "+f.secrets["viewer-a"])
			if etag != "" {
				req.Header.Set("If-None-Match", etag)
			}
			resp, err := f.srv.Client().Do(req)
			must(t, err)
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("ETag")
		}
		code, etag := get("")
		if code != ok || etag == "" {
			t.Fatalf("first GET: %d, ETag %q", code, etag)
		}
		if code, _ := get(etag); code != http.StatusNotModified {
			t.Errorf("GET with its ETag: %d, want 304", code)
		}
	})

	t.Run("the audit trail names the actor and its role", func(t *testing.T) {
		recs, err := f.log.List(t.Context(), audit.Filter{})
		must(t, err)
		got := map[string]string{}
		for _, r := range recs {
			if r.Actor == "admin" {
				t.Errorf("record %d (%s) says just admin", r.Seq, r.Action)
			}
			if r.Actor != "" && strings.HasPrefix(r.Actor, "token:") {
				got[r.Action] = fmt.Sprintf("%s %v", r.Actor, r.Detail["role"])
			}
		}
		for action, want := range map[string]string{
			"cluster.added":      "token:admin admin",
			"cluster.relabelled": "token:admin admin",
			"cluster.removed":    "token:admin admin",
			"token.issued":       "token:admin admin",
			"cluster.rotated":    "token:admin admin",
			"user-token.created": "token:admin admin",
			"user-token.revoked": "token:admin admin",
			"user-token.rotated": "token:admin admin",
		} {
			if got[action] != want {
				t.Errorf("%s: %q, want %q", action, got[action], want)
			}
		}
		if !slices.Equal(f.relabel, []string{"token:admin"}) {
			t.Errorf("ClusterRelabelled was told %v, want token:admin", f.relabel)
		}
		// A refused call is audited with who tried.
		refused := slices.ContainsFunc(recs, func(r audit.Record) bool {
			return r.Action == "api.call" && r.Actor == "token:deployer-a" && r.Detail["role"] == "deployer:team-a" && fmt.Sprint(r.Detail["status"]) == "403"
		})
		if !refused {
			t.Error("no api.call record of deployer-a's refused call")
		}
	})
}
