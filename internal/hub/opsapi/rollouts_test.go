package opsapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/phase"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/rollout"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// rolloutAuth maps bearer tokens to principals.
type rolloutAuth map[string]access.Principal

func (a rolloutAuth) Authenticate(_ context.Context, bearer string) (access.Principal, error) {
	p, ok := a[bearer]
	if !ok {
		return access.Principal{}, http.ErrNoCookie
	}
	return p, nil
}

type rolloutAPI struct {
	handler http.Handler
	store   store.Store
	mu      sync.Mutex
	events  []audit.Event
	wakes   int
}

func waves(approval string) *v1alpha1.Rollout {
	return &v1alpha1.Rollout{Waves: []v1alpha1.Wave{
		{Name: "canary", Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "rest", Approval: approval},
	}}
}

// newRolloutAPI serves the user API with the operations mounted, on a real SQLite store, for a
// fleet of web (project team-a, whose rollout waits for the approval of its wave rest),
// baseline (platform, with a rollout) and plain (no rollout).
func newRolloutAPI(t *testing.T, now time.Time) *rolloutAPI {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fleet := &v1alpha1.Fleet{Releases: []v1alpha1.Release{
		{Metadata: v1alpha1.ObjectMeta{Name: "web"}, Spec: v1alpha1.ReleaseSpec{Project: "team-a", Rollout: waves(v1alpha1.ApprovalRequired)}},
		{Metadata: v1alpha1.ObjectMeta{Name: "baseline"}, Spec: v1alpha1.ReleaseSpec{Rollout: waves("")}},
		{Metadata: v1alpha1.ObjectMeta{Name: "plain"}},
	}}
	// web's rollout of r2: the canary is done, the rest waits for approval.
	art := func(r string) rollout.Artifact { return rollout.Artifact{Digest: "sha256:" + r, Revision: "main@" + r} }
	var web rollout.State
	in := rollout.Input{Spec: fleet.Releases[0].Spec.Rollout, Newest: art("r2"), Now: now.Add(-time.Hour), Clusters: []rollout.Cluster{
		{Name: "c1", Labels: map[string]string{"ring": "canary"}, Reachable: true, Had: art("r1")},
		{Name: "c2", Reachable: true, Had: art("r1")},
	}}
	rollout.Step(&web, in)
	in.Clusters[0].Report = &rollout.Report{Digest: "sha256:r2", Phase: "Ready", At: in.Now}
	rollout.Step(&web, in)
	if web.Phase != rollout.PhaseWaitingApproval {
		t.Fatalf("web's rollout is %s, want WaitingApproval", web.Phase)
	}
	data, _ := json.Marshal(&web)
	if _, err := st.PutRecord(t.Context(), store.Record{Kind: rollout.RecordKind, Key: "web", Data: data}, 0); err != nil {
		t.Fatal(err)
	}
	// old-web (team-a) was deleted: it leaves its clusters along its waves, and its second
	// wave waits for approval.
	old := rollout.State{Spec: waves(v1alpha1.ApprovalRequired), Project: "team-a"}
	rollout.StepRemoval(&old, rollout.Input{Now: now, Clusters: []rollout.Cluster{
		{Name: "c1", Labels: map[string]string{"ring": "canary"}, Reachable: true, Had: art("r1")},
		{Name: "c2", Reachable: true, Had: art("r1")},
	}})
	if old.Phase != rollout.PhaseWaitingApproval {
		t.Fatalf("old-web's removal is %s, want WaitingApproval", old.Phase)
	}
	data, _ = json.Marshal(&old)
	if _, err := st.PutRecord(t.Context(), store.Record{Kind: rollout.RecordKind, Key: "old-web", Data: data}, 0); err != nil {
		t.Fatal(err)
	}
	view := func() controller.View { return controller.View{Fleet: fleet} }
	ra := &rolloutAPI{store: st}
	record := func(_ context.Context, e audit.Event) {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		ra.events = append(ra.events, e)
	}
	ops := New(Deps{Store: st, View: view, Record: record, Clock: clock.NewFake(now), Wake: func() {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		ra.wakes++
	}}, Options{})
	auth := rolloutAuth{
		"admin-token":    {Actor: "token:admin", Grants: []access.Grant{{Role: access.Admin}}},
		"team-a-token":   {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}},
		"viewer-a-token": {Actor: "token:viewer-a", Grants: []access.Grant{{Role: access.Viewer, Projects: []string{"team-a"}}}},
		"viewer-token":   {Actor: "token:viewer", Grants: []access.Grant{{Role: access.Viewer}}},
	}
	ra.handler = httpapi.New(httpapi.Deps{Fleet: func() *v1alpha1.Fleet { return view().Fleet }, Record: record, Auth: auth}, httpapi.Options{}).Handler(ops.Routes())
	return ra
}

func (ra *rolloutAPI) do(method, token, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	ra.handler.ServeHTTP(rec, req)
	return rec
}

func (ra *rolloutAPI) audited(action string) []audit.Event {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	var out []audit.Event
	for _, e := range ra.events {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func errorOf(rec *httptest.ResponseRecorder) string {
	var e hubclient.APIError
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return e.Error
}

func TestRolloutRoutes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	ra := newRolloutAPI(t, now)

	t.Run("the list holds the rollouts the principal may view", func(t *testing.T) {
		for token, want := range map[string]string{"viewer-a-token": "web old-web", "viewer-token": "web baseline old-web", "admin-token": "web baseline old-web"} {
			rec := ra.do("GET", token, "/api/v1/rollouts", "")
			var views []phase.RolloutView
			if err := json.Unmarshal(rec.Body.Bytes(), &views); rec.Code != http.StatusOK || err != nil {
				t.Fatalf("%s: status %d %s", token, rec.Code, rec.Body)
			}
			var names []string
			for _, v := range views {
				names = append(names, v.Release+"")
			}
			if got := strings.Join(names, " "); got != want {
				t.Errorf("%s sees %q, want %q", token, got, want)
			}
		}
	})

	t.Run("one rollout, as its waves stand", func(t *testing.T) {
		rec := ra.do("GET", "viewer-a-token", "/api/v1/rollouts/web", "")
		var v phase.RolloutView
		if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("status %d %s", rec.Code, rec.Body)
		}
		if v.Phase != rollout.PhaseWaitingApproval || v.Revision != "main@r2" || v.StableRevision != "main@r1" || len(v.Waves) != 2 ||
			v.Waves[0].Phase != rollout.WaveDone || v.Waves[1].Phase != rollout.WaveWaitingApproval || !v.Waves[1].Approval {
			t.Errorf("view %+v", v)
		}
		if rec := ra.do("GET", "admin-token", "/api/v1/rollouts/baseline", ""); rec.Code != http.StatusOK {
			t.Errorf("a rollout that never ran: status %d %s", rec.Code, rec.Body)
		} else if !strings.Contains(rec.Body.String(), `"phase":"Idle"`) {
			t.Errorf("a rollout that never ran: %s, want phase Idle", rec.Body)
		}
	})

	t.Run("a deployer of the release's project approves the waiting wave", func(t *testing.T) {
		rec := ra.do("POST", "team-a-token", "/api/v1/rollouts/web/approve", ``)
		var v phase.RolloutView
		if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("status %d %s", rec.Code, rec.Body)
		}
		if v.Waves[1].ApprovedBy != "oidc:alice" {
			t.Errorf("wave rest approved by %q, want oidc:alice", v.Waves[1].ApprovedBy)
		}
		r, err := ra.store.GetRecord(t.Context(), rollout.RecordKind, "web")
		if err != nil || !strings.Contains(string(r.Data), `"approvedBy":"oidc:alice"`) {
			t.Errorf("stored %s, %v: want the approval", r.Data, err)
		}
		evs := ra.audited("rollout.approved")
		if len(evs) != 1 || evs[0].Actor != "oidc:alice" || evs[0].Release != "web" || evs[0].Detail["wave"] != "rest" || evs[0].Detail["role"] != "deployer:team-a" {
			t.Errorf("audit %+v", evs)
		}
		if ra.wakes == 0 {
			t.Error("the controller was not woken")
		}
	})

	t.Run("concurrent pauses: one wins, the others are refused, none is lost", func(t *testing.T) {
		var wg sync.WaitGroup
		codes := make([]int, 6)
		for i := range codes {
			wg.Go(func() { codes[i] = ra.do("POST", "admin-token", "/api/v1/rollouts/web/pause", "").Code })
		}
		wg.Wait()
		won := 0
		for _, c := range codes {
			switch c {
			case http.StatusOK:
				won++
			case http.StatusConflict:
			default:
				t.Errorf("status %d", c)
			}
		}
		if won != 1 || len(ra.audited("rollout.paused")) != 1 {
			t.Errorf("%d pauses answered 200 and %d audited, want 1 and 1 (%v)", won, len(ra.audited("rollout.paused")), codes)
		}
		if rec := ra.do("POST", "admin-token", "/api/v1/rollouts/web/resume", ""); rec.Code != http.StatusOK {
			t.Errorf("resume: status %d %s", rec.Code, rec.Body)
		}
	})

	refusals := []struct {
		name, token, path, body string
		status                  int
		want                    string
	}{
		{"a viewer", "viewer-token", "/api/v1/rollouts/web/pause", ``, http.StatusForbidden,
			"token:viewer (viewer) may not POST /api/v1/rollouts/web/pause: it needs deployer of the release's project"},
		{"a deployer of another project", "team-a-token", "/api/v1/rollouts/baseline/pause", ``, http.StatusForbidden,
			"oidc:alice (deployer:team-a) may not POST /api/v1/rollouts/baseline/pause: it needs deployer of the release's project"},
		{"a second approval", "team-a-token", "/api/v1/rollouts/web/approve", `{"wave": "rest"}`, http.StatusConflict,
			"rollout of web: approve: wave rest was already approved by oidc:alice: rollout action refused"},
		{"an unknown wave", "team-a-token", "/api/v1/rollouts/web/approve", `{"wave": "nope"}`, http.StatusConflict,
			`rollout of web: approve: the rollout has no wave "nope": rollout action refused`},
		{"resuming what is not paused", "team-a-token", "/api/v1/rollouts/web/resume", ``, http.StatusConflict,
			"rollout of web: resume: the rollout is WaitingApproval, not paused: rollout action refused"},
		{"an action on a rollout that never ran", "admin-token", "/api/v1/rollouts/baseline/abort", ``, http.StatusConflict,
			"rollout of baseline: abort: the rollout is Idle: rollout action refused"},
		{"a release without a rollout", "admin-token", "/api/v1/rollouts/plain/pause", ``, http.StatusConflict,
			"release plain has no rollout: its new revisions go to every cluster at once"},
		{"an unknown release", "admin-token", "/api/v1/rollouts/nope/pause", ``, http.StatusNotFound,
			`release "nope" not found in the fleet configuration`},
		{"another project's rollout, to a viewer of team-a", "viewer-a-token", "/api/v1/rollouts/baseline", ``, http.StatusNotFound,
			`release "baseline" not found in the fleet configuration`},
		{"an unknown action", "admin-token", "/api/v1/rollouts/web/promote", ``, http.StatusBadRequest,
			`rollout action "promote": use pause, resume, approve, abort or rollback`},
		{"an unknown field", "admin-token", "/api/v1/rollouts/web/approve", `{"waves": ["rest"]}`, http.StatusBadRequest,
			`rollout action: want {"wave": ...}: json: unknown field "waves"`},
		{"a wave with a control character", "admin-token", "/api/v1/rollouts/web/approve", `{"wave": "a\nb"}`, http.StatusBadRequest,
			`rollout action: wave "a\nb" is not a wave name (at most 63 characters, no control character)`},
		{"a body over 4 KiB", "admin-token", "/api/v1/rollouts/web/approve", `{"wave": "` + strings.Repeat("w", 4<<10) + `"}`, http.StatusRequestEntityTooLarge,
			"rollout action: body over 4096 bytes"},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			before, _ := ra.store.GetRecord(t.Context(), rollout.RecordKind, "web")
			method := "POST"
			if !strings.Contains(strings.TrimPrefix(tt.path, "/api/v1/rollouts/"), "/") {
				method = "GET"
			}
			rec := ra.do(method, tt.token, tt.path, tt.body)
			if got := errorOf(rec); rec.Code != tt.status || got != tt.want {
				t.Errorf("status %d %q, want %d %q", rec.Code, got, tt.status, tt.want)
			}
			if after, _ := ra.store.GetRecord(t.Context(), rollout.RecordKind, "web"); after.Version != before.Version {
				t.Errorf("a refused action changed web's rollout (version %d -> %d)", before.Version, after.Version)
			}
		})
	}

	t.Run("a deleted release's removal is shown, and approved by a deployer of every project", func(t *testing.T) {
		rec := ra.do("GET", "viewer-a-token", "/api/v1/rollouts/old-web", "")
		var v phase.RolloutView
		if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("status %d %s", rec.Code, rec.Body)
		}
		if !v.Removal || v.Phase != rollout.PhaseWaitingApproval || len(v.Waves) != 2 {
			t.Errorf("view %+v: want a removal waiting for approval", v)
		}
		if rec := ra.do("POST", "team-a-token", "/api/v1/rollouts/old-web/approve", ""); rec.Code != http.StatusForbidden {
			t.Errorf("a deployer of team-a approved a deleted release's removal: status %d %s", rec.Code, rec.Body)
		}
		if rec := ra.do("POST", "admin-token", "/api/v1/rollouts/old-web/abort", ""); rec.Code != http.StatusConflict ||
			errorOf(rec) != "rollout of old-web: abort: the release was deleted and leaves its clusters wave by wave; to keep it, add it back to the fleet: rollout action refused" {
			t.Errorf("abort of a removal: status %d %q", rec.Code, errorOf(rec))
		}
		rec = ra.do("POST", "admin-token", "/api/v1/rollouts/old-web/approve", "")
		if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil || v.Waves[1].ApprovedBy != "token:admin" {
			t.Errorf("approve: status %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("rollback sends the started clusters back to the stable revision", func(t *testing.T) {
		rec := ra.do("POST", "team-a-token", "/api/v1/rollouts/web/rollback", "")
		var v phase.RolloutView
		if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("status %d %s", rec.Code, rec.Body)
		}
		if v.Phase != rollout.PhaseRolledBack || v.Waves[0].Clusters[0].Cluster != "c1" || v.Waves[0].Clusters[0].Phase != rollout.ClusterRolledBack ||
			v.Waves[0].Clusters[0].Revision != "main@r1" {
			t.Errorf("view after rollback %+v", v)
		}
		if evs := ra.audited("rollout.rolled-back"); len(evs) != 1 || evs[0].Actor != "oidc:alice" {
			t.Errorf("audit %+v", evs)
		}
	})
}
