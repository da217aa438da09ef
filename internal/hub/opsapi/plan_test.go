package opsapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/plan"
	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/hub/source"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// TestReadPlanRequest: every refusal of a hostile or malformed plan request says what is
// wrong; a valid one passes.
func TestReadPlanRequest(t *testing.T) {
	t.Parallel()
	many := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"files": {`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"f%d.yaml": "x"`, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	big := `{"files": {"a.yaml": "` + strings.Repeat("x", 5<<20) + `", "b.yaml": "` + strings.Repeat("x", 4<<20) + `"}}`
	tests := []struct {
		name, body, want string
	}{
		{"files", `{"files": {"fleet/a.yaml": "kind: Release"}, "sources": {"apps": "feature/x"}}`, ""},
		{"ref", `{"ref": "0123456789abcdef0123456789abcdef01234567"}`, ""},
		{"neither", `{}`, "plan request: give the candidate as either files or a ref of the fleet repository"},
		{"both", `{"files": {"a.yaml": ""}, "ref": "main"}`, "either files or a ref"},
		{"unknown field", `{"ref": "main", "live": true}`, `unknown field "live"`},
		{"option as ref", `{"ref": "--upload-pack=touch /tmp/x"}`, `ref "--upload-pack=touch /tmp/x": want a branch name or a full commit`},
		{"ref with ..", `{"ref": "a..b"}`, `ref "a..b": want a branch name`},
		{"path outside", `{"files": {"../etc/passwd.yaml": "x"}}`, `file "../etc/passwd.yaml": want a relative, clean path to a .yaml, .yml or .json file`},
		{"absolute path", `{"files": {"/etc/a.yaml": "x"}}`, `file "/etc/a.yaml": want a relative`},
		{"not yaml", `{"files": {"a.sh": "x"}}`, `file "a.sh": want a relative`},
		{"unclean path", `{"files": {"a/./b.yaml": "x"}}`, `file "a/./b.yaml": want a relative`},
		{"too many files", many(1001), "plan request: 1001 files: at most 1000"},
		{"too many bytes", big, "plan request: the files hold 9437184 bytes: at most 8388608"},
		{"bad source", `{"ref": "main", "sources": {"apps": "-x"}}`, `source "apps" at "-x": want NAME=BRANCH or NAME=COMMIT`},
		{"too many sources", `{"ref": "main", "sources": {` + func() string {
			var parts []string
			for i := range 21 {
				parts = append(parts, fmt.Sprintf(`"s%d": "main"`, i))
			}
			return strings.Join(parts, ",")
		}() + `}}`, "plan request: 21 sources at other refs: at most 20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/plan", strings.NewReader(tt.body))
			_, err := readPlanRequest(httptest.NewRecorder(), r)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	r := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/plan", strings.NewReader(`{"files": {"a.yaml": "`+strings.Repeat("x", 11<<20)+`"}}`))
	if _, err := readPlanRequest(httptest.NewRecorder(), r); err == nil || !strings.Contains(err.Error(), "request body too large") {
		t.Errorf("a body over %d bytes: %v", maxPlanBody, err)
	}
}

// TestScopePlan: what the route hands the plan: a viewer of every project sees everything; a
// deployer of team-a sees team-a's releases only, by their project in the fleet in force
// (which the plan reads), and only the clusters team-a's Project in force may target.
func TestScopePlan(t *testing.T) {
	t.Parallel()
	inForce, err := v1alpha1.Parse(map[string][]byte{"fleet.yaml": []byte(scopedFleetYAML)})
	if err != nil {
		t.Fatal(err)
	}
	var in plan.Input
	if scopePlan(&in, access.Principal{Actor: "token:ci", Grants: []access.Grant{{Role: access.Viewer}}}, inForce) ||
		in.Visible != nil || in.SeesCluster != nil || in.InForce != inForce {
		t.Errorf("a viewer of every project is scoped, or the plan does not read the fleet in force")
	}
	in = plan.Input{}
	teamA := access.Principal{Actor: "token:team-a", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}}
	if !scopePlan(&in, teamA, inForce) || in.InForce != inForce || in.Visible == nil || in.SeesCluster == nil {
		t.Fatalf("a deployer of team-a is not scoped, or the plan does not read the fleet in force: %+v", in)
	}
	if !in.Visible("web", "team-a") || in.Visible("db", "team-b") || in.Visible("ingress", "platform") {
		t.Errorf("a deployer of team-a: releases seen wrong")
	}
	dev := schedule.Cluster{Name: "d1", Labels: map[string]string{"env": "dev"}}
	prod := schedule.Cluster{Name: "p1", Labels: map[string]string{"env": "prod"}}
	if !in.SeesCluster(dev) || in.SeesCluster(prod) {
		t.Errorf("a deployer of team-a (bound to env=dev): sees dev %v, prod %v; want true, false", in.SeesCluster(dev), in.SeesCluster(prod))
	}
}

// TestPlanRefusals: the route answers 501 on a hub without what a plan needs, 429 while
// the plans it computes at once are running, and 400 for a ref on a hub whose fleet is a
// directory.
func TestPlanRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifact.NewStore(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	fleet := &v1alpha1.Fleet{}
	view := func() controller.View { return controller.View{Fleet: fleet, Revision: "r1"} }
	postAs := func(a *API, pr access.Principal, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/plan", strings.NewReader(body))
		r = r.WithContext(access.WithPrincipal(r.Context(), pr))
		a.plan(rec, r)
		return rec
	}
	post := func(a *API, body string) *httptest.ResponseRecorder {
		return postAs(a, access.Principal{Actor: "token:ci", Grants: []access.Grant{{Role: access.Viewer}}}, body)
	}

	bare := New(Deps{Store: st, View: view}, Options{})
	bare.Routes()
	if rec := post(bare, `{"ref": "main"}`); rec.Code != http.StatusNotImplemented || !strings.Contains(rec.Body.String(), "this hub does not compute plans") {
		t.Errorf("without plan deps: %d %s", rec.Code, rec.Body.String())
	}

	a := New(Deps{Store: st, View: view, Plan: PlanDeps{Store: st, Artifacts: arts, Poller: source.NewPoller(filepath.Join(dir, "git")),
		Fleet: dir, WorkDir: dir}}, Options{})
	a.Routes()
	if rec := post(a, `{"ref": "main"}`); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "the hub reads its fleet from a directory, which has no refs") {
		t.Errorf("a ref of a directory fleet: %d %s", rec.Code, rec.Body.String())
	}
	var held []func()
	for _, caller := range []string{"token:one", "token:two"} {
		release, err := a.d.Plan.slots.take(caller)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if rec := post(a, `{"ref": "main"}`); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "2 plans are being computed; try again shortly") ||
		rec.Header().Get("Retry-After") == "" {
		t.Errorf("while 2 plans run: %d %s (Retry-After %q)", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
	for _, release := range held {
		release()
	}

	// One plan per team at a time: while team-a's CI computes one, another token of team-a
	// waits, and the second slot stays free for the others.
	release, err := a.d.Plan.slots.take(planCaller(access.Principal{Actor: "token:team-a-ci",
		Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	teamA := access.Principal{Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Viewer, Projects: []string{"team-a"}}}}
	if rec := postAs(a, teamA, `{"ref": "main"}`); rec.Code != http.StatusTooManyRequests ||
		!strings.Contains(rec.Body.String(), "a plan for project team-a is being computed; one at a time") {
		t.Errorf("team-a's second plan: %d %s", rec.Code, rec.Body.String())
	}
	if rec := post(a, `{"ref": "main"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("another caller's plan while team-a's runs: %d %s, want it computed (and refused for its ref)", rec.Code, rec.Body.String())
	}
	release()
	if rec := post(a, `{"files": {"fleet.yaml": "apiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: web}\nspec: {source: apps}\n"}}`); rec.Code != http.StatusOK {
		t.Errorf("a plan once the others are done: %d %s", rec.Code, rec.Body.String())
	}
}

// scopedFleetYAML is the fleet in force of the scope tests: the platform's ingress and team-a's
// web, each from its own source, team-a bound to the env=dev clusters.
const scopedFleetYAML = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: platform}
spec: {git: {url: "file:///nonexistent/platform-infra"}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: team-a}
spec: {git: {url: "file:///nonexistent/team-a-apps"}}
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: [team-a]
  namespaces: [team-a]
  clusterSelector: {matchLabels: {env: dev}}
  serviceAccount: {namespace: flotilla-tenants, name: team-a}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: platform-ingress}
spec: {source: platform, path: ingress, targets: [{selector: {}}]}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: a-web}
spec: {source: team-a, project: team-a, namespace: team-a, path: web, targets: [{selector: {}}]}
`

// TestPlanScopedCaller: a viewer and a deployer of team-a plan team-a's own change, but are
// refused (403, naming what they may not change) a candidate that relabels the platform's
// release as team-a's, widens team-a's Project, or reads the platform's source at another
// ref.
func TestPlanScopedCaller(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifact.NewStore(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := v1alpha1.Parse(map[string][]byte{"fleet.yaml": []byte(scopedFleetYAML)})
	if err != nil {
		t.Fatal(err)
	}
	view := func() controller.View { return controller.View{Fleet: fleet, Revision: "r1"} }
	a := New(Deps{Store: st, View: view, Plan: PlanDeps{Store: st, Artifacts: arts, Poller: source.NewPoller(filepath.Join(dir, "git")),
		Fleet: dir, WorkDir: dir}}, Options{})
	a.Routes()

	edit := func(old, new string) string {
		if !strings.Contains(scopedFleetYAML, old) {
			t.Fatalf("the fixture has no %q", old)
		}
		return strings.Replace(scopedFleetYAML, old, new, 1)
	}
	body := func(fleetYAML, sources string) string {
		b := fmt.Sprintf(`{"files": {"fleet.yaml": %q}`, fleetYAML)
		if sources != "" {
			b += `, "sources": ` + sources
		}
		return b + "}"
	}
	relabelled := edit("spec: {source: platform, path: ingress,", "spec: {source: platform, project: team-a, path: ingress,")
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"own change", body(edit("path: web,", "path: web2,"), ""), http.StatusOK, `"scoped":true`},
		{"own source at another ref", body(scopedFleetYAML, `{"team-a": "feature"}`), http.StatusOK, `source team-a:`},
		{"the attack: the platform's release relabelled, team-a widened",
			body(strings.Replace(relabelled, "clusterSelector: {matchLabels: {env: dev}}", "clusterSelector: {}", 1), ""),
			http.StatusForbidden, "plan refused: Project team-a changed: only a caller of every project may plan changes to Projects; your projects are [team-a]"},
		{"the platform's release relabelled", body(relabelled, ""), http.StatusForbidden,
			"plan refused: release platform-ingress would move from project platform to team-a: a release may not move into or out of your projects [team-a]"},
		{"the platform's release changed", body(edit("path: ingress,", "path: ingress2,"), ""), http.StatusForbidden,
			"plan refused: release platform-ingress is in project platform, outside your projects [team-a]: the candidate changes it"},
		{"the platform's source at another ref", body(scopedFleetYAML, `{"platform": "feature"}`), http.StatusForbidden,
			"plan refused: --source platform: none of your projects [team-a] may use source platform (their spec.sources)"},
	}
	for _, role := range []access.Role{access.Viewer, access.Deployer} {
		for _, tt := range tests {
			t.Run(string(role)+"/"+tt.name, func(t *testing.T) {
				rec := httptest.NewRecorder()
				r := httptest.NewRequestWithContext(t.Context(), "POST", "/api/v1/plan", strings.NewReader(tt.body))
				r = r.WithContext(access.WithPrincipal(r.Context(), access.Principal{Actor: "token:team-a",
					Grants: []access.Grant{{Role: role, Projects: []string{"team-a"}}}}))
				a.plan(rec, r)
				if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.want) {
					t.Fatalf("%d %s\nwant %d with %q", rec.Code, rec.Body.String(), tt.code, tt.want)
				}
				if rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "platform") {
					t.Errorf("a team-a plan names the platform's source or release: %s", rec.Body.String())
				}
			})
		}
	}
}
