package userapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/controller"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// TestListAuditCheckpoints: checkpoints=false leaves out apply.verified records, the default
// keeps them, and details come as JSON objects.
func TestListAuditCheckpoints(t *testing.T) {
	t.Parallel()
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
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, action := range []string{audit.ActionApply, audit.ActionVerified, audit.ActionApply, audit.ActionVerified} {
		if _, err := log.Append(ctx, audit.Event{Time: t0.Add(time.Duration(i) * time.Hour), Actor: "agent:eu-1", Action: action, Cluster: "eu-1", Release: "web",
			Detail: map[string]any{"revision": "r1", "verified": map[string]any{"count": 6}}}); err != nil {
			t.Fatal(err)
		}
	}
	api := New(Deps{
		Store: st, Seen: neverSeen{}, Desired: desired.NewCache(), Audit: log,
		View: func() controller.View { return controller.View{} },
	}, Options{TokenTTL: time.Hour, UnreachableAfter: time.Minute})
	srv := httptest.NewServer(serve(api, adminToken(t, "secret")))
	t.Cleanup(srv.Close)

	tests := []struct {
		query    string
		wantCode int
		wantSeqs []int64
	}{
		{"", http.StatusOK, []int64{1, 2, 3, 4}},
		{"?checkpoints=true", http.StatusOK, []int64{1, 2, 3, 4}},
		{"?checkpoints=false", http.StatusOK, []int64{1, 3}},
		{"?checkpoints=false&limit=1", http.StatusOK, []int64{3}},
		{"?checkpoints=false&format=jsonl", http.StatusOK, []int64{1, 3}},
		{"?checkpoints=no", http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/audit"+tt.query, nil)
			req.Header.Set("Authorization", "Bearer secret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("GET /api/v1/audit%s: status %d, want %d", tt.query, resp.StatusCode, tt.wantCode)
			}
			if tt.wantCode != http.StatusOK {
				return
			}
			type rec struct {
				Seq    int64           `json:"seq"`
				Detail json.RawMessage `json:"detail"`
			}
			var recs []rec
			dec := json.NewDecoder(resp.Body)
			if strings.Contains(tt.query, "jsonl") {
				for dec.More() {
					var r rec
					if err := dec.Decode(&r); err != nil {
						t.Fatal(err)
					}
					recs = append(recs, r)
				}
			} else if err := dec.Decode(&recs); err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, r := range recs {
				seqs = append(seqs, r.Seq)
				if want := `{"revision":"r1","verified":{"count":6}}`; string(r.Detail) != want {
					t.Errorf("record %d: detail %s, want the object %s", r.Seq, r.Detail, want)
				}
			}
			if diff := cmp.Diff(tt.wantSeqs, seqs); diff != "" {
				t.Errorf("GET /api/v1/audit%s: seqs (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}
