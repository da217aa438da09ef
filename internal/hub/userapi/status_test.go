package userapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
)

func TestRolloutNotice(t *testing.T) {
	t.Parallel()
	const (
		fleetURL = "https://git.example.com/platform/fleet.git"
		rejected = "272e309a4b1c5d6e7f8091a2b3c4d5e6f7089a1b"
		inForce  = "1a2b3c4d5e6f7081920a1b2c3d4e5f6071829304"
	)
	tests := []struct {
		name     string
		fleetURL string
		rejected string
		sources  []hubclient.SourceView
		want     string
	}{
		{
			name: "a source of the fleet repository at the rejected commit", fleetURL: fleetURL, rejected: rejected,
			sources: []hubclient.SourceView{{Name: "platform", URL: "https://git.example.com/platform/fleet", Revision: "main@sha1:" + rejected}},
			want:    "Commit 272e309 rolls out through source 'platform' (same repository as the fleet) although its fleet configuration was rejected: clusters get its manifests with the release settings of 1a2b3c4.",
		},
		{
			name: "two of them", fleetURL: fleetURL, rejected: rejected,
			sources: []hubclient.SourceView{
				{Name: "apps", URL: fleetURL, Revision: "main@sha1:" + rejected},
				{Name: "other", URL: "https://git.example.com/platform/other.git", Revision: "main@sha1:" + rejected},
				{Name: "platform", URL: fleetURL, Revision: "main@sha1:" + rejected},
			},
			want: "Commit 272e309 rolls out through sources 'apps', 'platform' (same repository as the fleet) although its fleet configuration was rejected: clusters get its manifests with the release settings of 1a2b3c4.",
		},
		{
			name: "the source is still at an older commit", fleetURL: fleetURL, rejected: rejected,
			sources: []hubclient.SourceView{{Name: "platform", URL: fleetURL, Revision: "main@sha1:" + inForce}},
		},
		{
			name: "another repository", fleetURL: fleetURL, rejected: rejected,
			sources: []hubclient.SourceView{{Name: "apps", URL: "https://git.example.com/platform/apps.git", Revision: "main@sha1:" + rejected}},
		},
		{
			name: "nothing rejected", fleetURL: fleetURL,
			sources: []hubclient.SourceView{{Name: "platform", URL: fleetURL, Revision: "main@sha1:" + inForce}},
		},
		{
			name: "a fleet in a directory", rejected: rejected,
			sources: []hubclient.SourceView{{Name: "platform", URL: fleetURL, Revision: "main@sha1:" + rejected}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rolloutNotice(tt.fleetURL, tt.rejected, inForce, tt.sources); got != tt.want {
				t.Errorf("rolloutNotice:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The status a user and the dashboard read carries the rejected commit and the sentence.
func TestStatusSaysTheRejectedCommitRollsOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const fleetURL, rejected, inForce = "file:///srv/fleet", "272e309a4b1c5d6e7f8091a2b3c4d5e6f7089a1b", "1a2b3c4d5e6f7081920a1b2c3d4e5f6071829304"
	now := time.Now()
	if err := st.PutFleetStatus(ctx, store.FleetStatus{Revision: inForce, Error: "fleet/fleet.yaml@272e309 line 3: document 1: yaml: oops", UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSourceStatus(ctx, store.SourceStatus{Name: "platform", URL: "/srv/fleet", Revision: "main@sha1:" + rejected, CheckedAt: now}); err != nil {
		t.Fatal(err)
	}
	api := New(Deps{
		Store: st, Seen: neverSeen{}, Desired: desired.NewCache(),
		View: func() controller.View {
			return controller.View{Revision: inForce, FleetURL: fleetURL, RejectedCommit: rejected}
		},
	}, Options{AgentURL: "https://agents", CAFingerprint: strings.Repeat("ab", 32), TokenTTL: time.Hour, UnreachableAfter: time.Minute})
	srv := httptest.NewServer(serve(api, adminToken(t, "secret")))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/status", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v hubclient.StatusView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Fleet.RejectedCommit != rejected || !strings.HasPrefix(v.Fleet.RolloutNotice, "Commit 272e309 rolls out through source 'platform'") {
		t.Errorf("fleet status = %+v", v.Fleet)
	}
}
