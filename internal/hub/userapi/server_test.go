package userapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

type neverSeen struct{}

func (neverSeen) Get(store.Cluster) (time.Time, string) { return time.Time{}, "" }
func (neverSeen) OutboxDepth(string) (int, bool)        { return 0, false }

// TestAPIWithoutHub serves the user API from its Deps alone: a store, no hub.
func TestAPIWithoutHub(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var changed, removed []string
	var records []string
	api := New(Deps{
		Store: st, Seen: neverSeen{}, Desired: desired.NewCache(),
		View:            func() controller.View { return controller.View{} },
		Record:          func(_ context.Context, e audit.Event) { records = append(records, e.Action) },
		ClustersChanged: func() { changed = append(changed, "changed") },
		ClusterRemoved:  func(name string) { removed = append(removed, name) },
	}, Options{AgentURL: "https://agents", CAFingerprint: strings.Repeat("ab", 32), TokenTTL: time.Hour, UnreachableAfter: time.Minute})
	srv := httptest.NewServer(serve(api, adminToken(t, "secret")))
	t.Cleanup(srv.Close)

	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := call("GET", "/api/v1/clusters", "wrong", ""); code != http.StatusUnauthorized || !strings.Contains(body, "a valid bearer token is required") {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	code, body := call("POST", "/api/v1/clusters", "secret", `{"name":"edge-1","labels":{"env":"prod"}}`)
	if code != http.StatusCreated {
		t.Fatalf("add: %d %s", code, body)
	}
	var join hubclient.JoinView
	if err := json.Unmarshal([]byte(body), &join); err != nil || join.Name != "edge-1" || !strings.Contains(join.AgentCommand, "--hub https://agents ") {
		t.Fatalf("add answered %s (%v)", body, err)
	}
	if code, body := call("GET", "/api/v1/status?release=nope", "secret", ""); code != http.StatusNotFound || !strings.Contains(body, `release \"nope\" is not in the fleet configuration in force (it has none)`) {
		t.Fatalf("unknown release: %d %s", code, body)
	}
	if code, body := call("GET", "/api/v1/audit", "secret", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("audit without a log: %d %s", code, body)
	}
	if code, body := call("DELETE", "/api/v1/clusters/edge-1", "secret", ""); code != http.StatusNoContent {
		t.Fatalf("remove: %d %s", code, body)
	}
	if len(changed) != 2 || len(removed) != 1 || removed[0] != "edge-1" {
		t.Errorf("callbacks: changed %v, removed %v", changed, removed)
	}
	want := "cluster.added token.issued api.call cluster.removed api.call"
	if got := strings.Join(records, " "); got != want {
		t.Errorf("audit records %q, want %q", got, want)
	}
}
