package opsapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/window/hold"
)

// gateFixture is what a case starts with: freeze and suspension records and the fleet's windows.
type gateFixture struct {
	freezes   []hold.Freeze
	suspended []string
	windows   []v1alpha1.Window
}

// newGateAPI serves the user API with the operations mounted on a real SQLite store holding
// clusters a1 (env=team-a) and p1 (env=platform), and a fleet of release web (project team-a,
// on env=team-a) and baseline (platform), with fx's gates.
func newGateAPI(t *testing.T, now time.Time, fx gateFixture) http.Handler {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, c := range []store.Cluster{{Name: "a1", Labels: map[string]string{"env": "team-a"}}, {Name: "p1", Labels: map[string]string{"env": "platform"}}} {
		if err := st.AddCluster(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	put := func(kind, key string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutRecord(t.Context(), store.Record{Kind: kind, Key: key, Data: data}, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fx.freezes {
		put(hold.RecordFreeze, f.ID, f)
	}
	for _, c := range fx.suspended {
		put(hold.RecordSuspend, c, hold.Suspension{Cluster: c, Reason: "maintenance", Actor: "token:platform"})
	}
	fleet := &v1alpha1.Fleet{
		Projects: []v1alpha1.Project{{Metadata: v1alpha1.ObjectMeta{Name: "team-a"},
			Spec: v1alpha1.ProjectSpec{ClusterSelector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"env": "team-a"}}}}},
		Releases: []v1alpha1.Release{
			{Metadata: v1alpha1.ObjectMeta{Name: "web"}, Spec: v1alpha1.ReleaseSpec{Project: "team-a"}},
			{Metadata: v1alpha1.ObjectMeta{Name: "baseline"}},
		},
		Windows: fx.windows,
	}
	view := func() controller.View { return controller.View{Fleet: fleet} }
	ops := New(Deps{Store: st, View: view, Clock: clock.NewFake(now)}, Options{})
	auth := tokenAuth{
		"admin-token":    {Actor: "token:admin", Grants: []access.Grant{{Role: access.Admin}}},
		"team-a-token":   {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}},
		"platform-token": {Actor: "token:platform", Grants: []access.Grant{{Role: access.Deployer}}},
	}
	return httpapi.New(httpapi.Deps{Fleet: func() *v1alpha1.Fleet { return view().Fleet }, Auth: auth}, httpapi.Options{}).Handler(ops.Routes())
}

func denyWindow(name, schedule string, releases ...string) v1alpha1.Window {
	return v1alpha1.Window{Metadata: v1alpha1.ObjectMeta{Name: name}, Spec: v1alpha1.WindowSpec{
		Type: v1alpha1.WindowDeny, Schedule: schedule, Duration: v1alpha1.Duration{Duration: time.Hour}, Releases: releases}}
}

// TestOverrideNeedsTheRightsToLiftTheGate: `flotilla sync --override` by a team deployer
// passes only gates of its own releases; a fleet-wide freeze, a cluster's suspension and a
// window covering other projects are refused, naming the gate, while an admin and a deployer
// of every project pass them.
func TestOverrideNeedsTheRightsToLiftTheGate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 10, 0, 0, time.UTC) // 21:10 UTC
	const override = `{"override": true, "reason": "hotfix"}`
	fleetFreeze := hold.Freeze{ID: "fleet-wide", Reason: "incident 4711", Actor: "token:platform", Created: now}
	webFreeze := hold.Freeze{ID: "frz-web", Release: "web", Reason: "team pause", Actor: "oidc:alice", Created: now}
	tests := []struct {
		name   string
		fx     gateFixture
		token  string
		body   string
		status int
		want   string
	}{
		{"a fleet-wide freeze", gateFixture{freezes: []hold.Freeze{fleetFreeze}}, "team-a-token", override, http.StatusForbidden,
			`override refused: freeze "fleet-wide" covers every project; lifting it needs an admin or a deployer of every project`},
		{"a fleet-wide freeze, by an admin", gateFixture{freezes: []hold.Freeze{fleetFreeze}}, "admin-token", override, http.StatusAccepted, ""},
		{"a fleet-wide freeze, by a deployer of every project", gateFixture{freezes: []hold.Freeze{fleetFreeze}}, "platform-token", override, http.StatusAccepted, ""},
		{"a fleet-wide freeze without override", gateFixture{freezes: []hold.Freeze{fleetFreeze}}, "team-a-token", `{}`, http.StatusAccepted, ""},
		{"a freeze of its own release", gateFixture{freezes: []hold.Freeze{webFreeze}}, "team-a-token", override, http.StatusAccepted, ""},
		{"a cluster suspension", gateFixture{suspended: []string{"a1"}}, "team-a-token", `{"cluster": "a1", "override": true, "reason": "hotfix"}`, http.StatusForbidden,
			`override refused: suspension of cluster "a1" covers every project on it; lifting it needs an admin or a deployer of every project`},
		{"a cluster suspension, by an admin", gateFixture{suspended: []string{"a1"}}, "admin-token", `{"cluster": "a1", "override": true, "reason": "hotfix"}`, http.StatusAccepted, ""},
		{"an open platform deny window of every release", gateFixture{windows: []v1alpha1.Window{denyWindow("change-freeze", "0 21 * * *")}}, "team-a-token", override, http.StatusForbidden,
			`override refused: window "change-freeze" covers every project; lifting it needs an admin or a deployer of every project it covers`},
		{"a window that opens while the request lives", gateFixture{windows: []v1alpha1.Window{denyWindow("change-freeze", "15 21 * * *")}}, "team-a-token", override, http.StatusForbidden,
			`override refused: window "change-freeze" covers every project; lifting it needs an admin or a deployer of every project it covers`},
		{"a window that stays shut while the request lives", gateFixture{windows: []v1alpha1.Window{denyWindow("change-freeze", "0 3 * * *")}}, "team-a-token", override, http.StatusAccepted, ""},
		{"a window whose glob covers another project", gateFixture{windows: []v1alpha1.Window{denyWindow("nights", "0 21 * * *", "*")}}, "team-a-token", override, http.StatusForbidden,
			`override refused: window "nights" covers release "baseline" of project "platform"; lifting it needs an admin or a deployer of every project it covers`},
		{"a window of its own releases alone", gateFixture{windows: []v1alpha1.Window{denyWindow("team-a-nights", "0 21 * * *", "web")}}, "team-a-token", override, http.StatusAccepted, ""},
		{"a sync naming a cluster outside its scope", gateFixture{}, "team-a-token", `{"cluster": "p1"}`, http.StatusForbidden,
			`sync refused: cluster "p1" is outside the scope of oidc:alice (deployer:team-a)`},
		{"a sync naming a cluster in its scope", gateFixture{}, "team-a-token", `{"cluster": "a1"}`, http.StatusAccepted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGateAPI(t, now, tt.fx)
			sa := &syncAPI{handler: h}
			rec := sa.post(tt.token, "/api/v1/releases/web/sync", tt.body)
			var e hubclient.APIError
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != tt.status || e.Error != tt.want {
				t.Errorf("status %d %q, want %d %q", rec.Code, e.Error, tt.status, tt.want)
			}
		})
	}
}

// TestSyncRequestsCoalesceAndCap: a request identical to a pending one answers the pending
// one's id and stores nothing; past the bound per release a request is refused with 429,
// Retry-After and the bound named.
func TestSyncRequestsCoalesceAndCap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 10, 0, 0, time.UTC)
	sa := &syncAPI{handler: newGateAPI(t, now, gateFixture{})}
	id := func(rec *httptest.ResponseRecorder) string {
		t.Helper()
		var v hubclient.SyncView
		if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return v.ID
	}
	first := id(sa.post("team-a-token", "/api/v1/releases/web/sync", `{"reason": "r0"}`))
	if again := id(sa.post("team-a-token", "/api/v1/releases/web/sync", `{"reason": "r0"}`)); again != first {
		t.Errorf("an identical request got id %s, want the pending one's %s", again, first)
	}
	for i := 1; i < syncreq.MaxPendingPerRelease; i++ {
		id(sa.post("team-a-token", "/api/v1/releases/web/sync", fmt.Sprintf(`{"reason": "r%d"}`, i)))
	}
	rec := sa.post("team-a-token", "/api/v1/releases/web/sync", `{"reason": "one more"}`)
	var e hubclient.APIError
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	want := `sync refused: release "web" has 20 pending sync requests, at most 20 (a request ends once every cluster reported it, or after 10m0s)`
	if rec.Code != http.StatusTooManyRequests || e.Error != want || rec.Header().Get("Retry-After") != "600" {
		t.Errorf("status %d %q Retry-After %q, want 429 %q 600", rec.Code, e.Error, rec.Header().Get("Retry-After"), want)
	}
}
