package opsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hub/syncreq"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// tokenAuth maps bearer tokens to principals.
type tokenAuth map[string]access.Principal

func (a tokenAuth) Authenticate(_ context.Context, bearer string) (access.Principal, error) {
	p, ok := a[bearer]
	if !ok {
		return access.Principal{}, errors.New("unknown token")
	}
	return p, nil
}

type syncAPI struct {
	handler http.Handler
	store   store.Store
	mu      sync.Mutex
	events  []audit.Event
	wakes   int
}

// newSyncAPI serves the user API with the operations mounted, on a real SQLite store holding
// clusters c1 and c2, and a fleet of release web (project team-a) and baseline (platform).
func newSyncAPI(t *testing.T, now time.Time) *syncAPI {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, c := range []string{"c1", "c2"} {
		if err := st.AddCluster(t.Context(), store.Cluster{Name: c, Labels: map[string]string{"env": "test"}}); err != nil {
			t.Fatal(err)
		}
	}
	fleet := &v1alpha1.Fleet{Releases: []v1alpha1.Release{
		{Metadata: v1alpha1.ObjectMeta{Name: "web"}, Spec: v1alpha1.ReleaseSpec{Project: "team-a"}},
		{Metadata: v1alpha1.ObjectMeta{Name: "baseline"}},
	}, Projects: []v1alpha1.Project{{Metadata: v1alpha1.ObjectMeta{Name: "team-a"}}}} // every cluster
	view := func() controller.View { return controller.View{Fleet: fleet} }
	sa := &syncAPI{store: st}
	record := func(_ context.Context, e audit.Event) {
		sa.mu.Lock()
		defer sa.mu.Unlock()
		sa.events = append(sa.events, e)
	}
	ops := New(Deps{Store: st, View: view, Record: record, Clock: clock.NewFake(now), Wake: func() {
		sa.mu.Lock()
		defer sa.mu.Unlock()
		sa.wakes++
	}}, Options{})
	auth := tokenAuth{
		"admin-token":    {Actor: "token:admin", Grants: []access.Grant{{Role: access.Admin}}},
		"team-a-token":   {Actor: "oidc:alice", Grants: []access.Grant{{Role: access.Deployer, Projects: []string{"team-a"}}}},
		"viewer-token":   {Actor: "token:viewer", Grants: []access.Grant{{Role: access.Viewer}}},
		"platform-token": {Actor: "token:platform", Grants: []access.Grant{{Role: access.Deployer}}},
	}
	sa.handler = httpapi.New(httpapi.Deps{Fleet: func() *v1alpha1.Fleet { return view().Fleet }, Record: record, Auth: auth}, httpapi.Options{}).Handler(ops.Routes())
	return sa
}

func (sa *syncAPI) post(token, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	sa.handler.ServeHTTP(rec, req)
	return rec
}

// eventsOf returns the audit events with action.
func (sa *syncAPI) eventsOf(action string) []audit.Event {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	var out []audit.Event
	for _, e := range sa.events {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func TestSyncRequests(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	sa := newSyncAPI(t, now)

	t.Run("a deployer of the release's project requests a sync of one cluster", func(t *testing.T) {
		rec := sa.post("team-a-token", "/api/v1/releases/web/sync", `{"cluster": "c1"}`)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var v hubclient.SyncView
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.ID, "sync-") || len(v.ID) != len("sync-")+16 || v.Release != "web" || v.Cluster != "c1" ||
			v.Override || v.Actor != "oidc:alice" || !v.Created.Equal(now) || !v.Expires.Equal(now.Add(syncreq.TTL)) {
			t.Errorf("answer %+v", v)
		}
		r, err := sa.store.GetRecord(t.Context(), syncreq.Kind, v.ID)
		if err != nil {
			t.Fatalf("the request was not stored: %v", err)
		}
		var stored syncreq.Request
		if err := json.Unmarshal(r.Data, &stored); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(syncreq.Request{ID: v.ID, Release: "web", Cluster: "c1", Actor: "oidc:alice", Created: now}, stored); diff != "" {
			t.Errorf("stored request (-want +got):\n%s", diff)
		}
		evs := sa.eventsOf(ActionSyncRequested)
		if len(evs) != 1 || evs[0].Actor != "oidc:alice" || evs[0].Release != "web" || evs[0].Cluster != "c1" ||
			evs[0].Detail["id"] != v.ID || evs[0].Detail["role"] != "deployer:team-a" {
			t.Errorf("audit %+v", evs)
		}
		if sa.wakes == 0 {
			t.Error("the controller was not woken")
		}
	})

	t.Run("an override is audited distinctly, with its reason", func(t *testing.T) {
		rec := sa.post("admin-token", "/api/v1/releases/baseline/sync", `{"override": true, "reason": "  CVE-2026-1234 hotfix  "}`)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		evs := sa.eventsOf(ActionSyncOverride)
		if len(evs) != 1 || evs[0].Actor != "token:admin" || evs[0].Release != "baseline" || evs[0].Detail["reason"] != "CVE-2026-1234 hotfix" ||
			evs[0].Detail["override"] != true || evs[0].Detail["clusters"] != "all" {
			t.Errorf("audit %+v", evs)
		}
	})

	t.Run("every release needs a deployer of every project", func(t *testing.T) {
		if rec := sa.post("platform-token", "/api/v1/sync", ``); rec.Code != http.StatusAccepted {
			t.Fatalf("a deployer of every project: status %d: %s", rec.Code, rec.Body)
		}
		rec := sa.post("team-a-token", "/api/v1/sync", `{}`)
		if want := "oidc:alice (deployer:team-a) may not POST /api/v1/sync: it needs deployer of every project"; rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("a deployer of team-a: status %d %s, want 403 %q", rec.Code, rec.Body, want)
		}
	})

	refusals := []struct {
		name, token, path, body string
		status                  int
		want                    string
	}{
		{"a viewer", "viewer-token", "/api/v1/releases/web/sync", `{}`, http.StatusForbidden,
			"token:viewer (viewer) may not POST /api/v1/releases/web/sync: it needs deployer of the release's project"},
		{"a deployer of another project", "team-a-token", "/api/v1/releases/baseline/sync", `{}`, http.StatusForbidden,
			"oidc:alice (deployer:team-a) may not POST /api/v1/releases/baseline/sync: it needs deployer of the release's project"},
		{"an override without a reason", "admin-token", "/api/v1/releases/web/sync", `{"override": true, "reason": "  "}`, http.StatusBadRequest,
			"sync request: an override needs a reason (it is recorded in the audit trail)"},
		{"an unknown release", "admin-token", "/api/v1/releases/nope/sync", `{}`, http.StatusNotFound,
			`release "nope" not found in the fleet configuration`},
		{"an unknown cluster", "admin-token", "/api/v1/releases/web/sync", `{"cluster": "c9"}`, http.StatusNotFound,
			`cluster "c9" not found`},
		{"an unknown field", "admin-token", "/api/v1/releases/web/sync", `{"clusters": ["c1"]}`, http.StatusBadRequest,
			`sync request: want {"cluster": ..., "override": ..., "reason": ...}: json: unknown field "clusters"`},
		{"a reason with a newline", "admin-token", "/api/v1/releases/web/sync", `{"override": true, "reason": "a\nforged line"}`, http.StatusBadRequest,
			"sync request: the reason has a control character"},
		{"an overlong reason", "admin-token", "/api/v1/releases/web/sync", `{"override": true, "reason": "` + strings.Repeat("r", 1025) + `"}`, http.StatusBadRequest,
			"sync request: reason of 1025 bytes: at most 1024"},
		{"a body over 64 KiB", "admin-token", "/api/v1/releases/web/sync", `{"reason": "` + strings.Repeat("r", 64<<10) + `"}`, http.StatusRequestEntityTooLarge,
			"sync request: body over 65536 bytes"},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			before, _ := sa.store.ListRecords(t.Context(), syncreq.Kind)
			rec := sa.post(tt.token, tt.path, tt.body)
			var e hubclient.APIError
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != tt.status || e.Error != tt.want {
				t.Errorf("status %d %q, want %d %q", rec.Code, e.Error, tt.status, tt.want)
			}
			after, _ := sa.store.ListRecords(t.Context(), syncreq.Kind)
			if len(after) != len(before) {
				t.Errorf("a refused request was stored: %d records, were %d", len(after), len(before))
			}
		})
	}
	if n := len(sa.eventsOf(ActionSyncRequested)) + len(sa.eventsOf(ActionSyncOverride)); n != 3 {
		t.Errorf("%d sync audit records, want 3 (the accepted requests only)", n)
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(sa.eventsOf("api.call"))
	if !strings.Contains(buf.String(), "/api/v1/releases/nope/sync") {
		t.Error("a refused call is not in the API call trail")
	}
}
