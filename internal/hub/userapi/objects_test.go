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

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/agentapi"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// TestAssignmentDetail reads one release on one cluster back as the agent reported it: the
// objects it detailed, drift an older agent reported without detail, and 404s that say what
// is unknown.
func TestAssignmentDetail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	if err := st.AddCluster(ctx, store.Cluster{Name: "eu-1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	doc, err := desired.Encode(desired.Document{Assignments: []desired.Assignment{
		{Release: "web", Source: "apps", Revision: "main@sha1:abc", Digest: "sha256:d1", Path: "web", Namespace: "apps", SelfHeal: true, Timeout: 5 * time.Minute, Interval: time.Minute},
		{Release: "db", Source: "apps", Revision: "main@sha1:abc", Digest: "sha256:d2", Path: "db"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutDesiredState(ctx, "eu-1", doc); err != nil {
		t.Fatal(err)
	}
	report := &agentv1.Report{Seq: 1, ProducedAt: timestamppb.New(now)}
	status := &agentv1.AssignmentStatus{
		Release: "web", Generation: 1, Revision: "main@sha1:abc", Digest: "sha256:d1", Phase: "Failed", Objects: 4, Configured: 1,
		Error:     `conflict: configmap/settings in namespace "apps": .data.logEndpoint owned by field manager "team-x"`,
		Conflicts: []string{`configmap/settings in namespace "apps": .data.logEndpoint owned by field manager "team-x"`},
		Drifted:   true,
		Drift: []*agentv1.DriftedObject{
			{Object: "configmap/level", Namespace: "apps", Paths: []string{".data.level"}},
			{Object: "service/old", Namespace: "apps", Paths: []string{".spec.type"}, Healed: true}, // no detail: an older agent
		},
		ObjectDetails: []*agentv1.ObjectDetail{
			{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings", Action: "conflict",
				Conflicts: []*agentv1.FieldConflict{{Field: ".data.logEndpoint", Owner: `field manager "team-x"`}}},
			{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "level", Action: "drifted",
				Drift: []*agentv1.FieldDrift{{Path: ".data.level", Desired: `"info"`, Live: `"debug"`}}},
		},
		ObjectDetailsOmitted: 2,
	}
	if _, err := st.IngestReport(ctx, "eu-1", 1, []store.AssignmentStatus{agentapi.StatusFromProto("eu-1", report, status)}); err != nil {
		t.Fatal(err)
	}
	fleet := &v1alpha1.Fleet{Releases: []v1alpha1.Release{{Metadata: v1alpha1.ObjectMeta{Name: "web"}}, {Metadata: v1alpha1.ObjectMeta{Name: "db"}}, {Metadata: v1alpha1.ObjectMeta{Name: "cache"}}}}
	api := New(Deps{Store: st, Seen: neverSeen{}, Desired: desired.NewCache(), View: func() controller.View { return controller.View{Fleet: fleet} }},
		Options{UnreachableAfter: time.Minute})
	srv := httptest.NewServer(serve(api, adminToken(t, "secret")))
	t.Cleanup(srv.Close)
	get := func(path string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	t.Run("lists every object the agent reported", func(t *testing.T) {
		code, body := get("/api/v1/clusters/eu-1/releases/web")
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		var got hubclient.AssignmentDetail
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		want := []hubclient.ObjectView{
			{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "settings", Object: "configmap/settings", Action: "conflict",
				Drift: []hubclient.FieldDrift{}, Conflicts: []hubclient.FieldConflict{{Field: ".data.logEndpoint", Owner: `field manager "team-x"`}}},
			{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "level", Object: "configmap/level", Action: "drifted",
				Drift: []hubclient.FieldDrift{{Path: ".data.level", Desired: `"info"`, Live: `"debug"`}}, Conflicts: []hubclient.FieldConflict{}},
			{Namespace: "apps", Object: "service/old", Action: "healed", Drift: []hubclient.FieldDrift{{Path: ".spec.type"}}, Conflicts: []hubclient.FieldConflict{}},
		}
		if diff := cmp.Diff(want, got.Objects); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
		if got.ObjectsOmitted != 2 || !got.Reported || got.Configured != 1 || got.Assignment.Phase != "Failed" || got.Assignment.Error != status.Error {
			t.Errorf("summary: omitted %d, reported %v, configured %d, phase %s, error %q", got.ObjectsOmitted, got.Reported, got.Configured, got.Assignment.Phase, got.Assignment.Error)
		}
		if diff := cmp.Diff(status.Conflicts, got.ConflictTexts); diff != "" {
			t.Errorf("conflict texts (-want +got):\n%s", diff)
		}
		wantDesired := hubclient.DesiredSettings{Source: "apps", Path: "web", Namespace: "apps", SelfHeal: true, Timeout: "5m0s", Interval: "1m0s"}
		if diff := cmp.Diff(wantDesired, got.Desired); diff != "" {
			t.Errorf("desired settings (-want +got):\n%s", diff)
		}
	})

	t.Run("an assignment not reported yet has no objects", func(t *testing.T) {
		code, body := get("/api/v1/clusters/eu-1/releases/db")
		var got hubclient.AssignmentDetail
		if err := json.Unmarshal(body, &got); err != nil || code != http.StatusOK || got.Reported || got.Objects == nil || len(got.Objects) != 0 {
			t.Errorf("%d %s (%v)", code, body, err)
		}
	})

	for _, tc := range []struct{ path, want string }{
		{"/api/v1/clusters/nope/releases/web", `cluster \"nope\" not found`},
		{"/api/v1/clusters/eu-1/releases/nope", `release \"nope\" is not in the fleet configuration in force`},
		{"/api/v1/clusters/eu-1/releases/cache", `release \"cache\" is not assigned to cluster \"eu-1\"`},
	} {
		t.Run("404 for "+tc.path, func(t *testing.T) {
			if code, body := get(tc.path); code != http.StatusNotFound || !strings.Contains(string(body), tc.want) {
				t.Errorf("%d %s; want 404 with %s", code, body, tc.want)
			}
		})
	}
}
