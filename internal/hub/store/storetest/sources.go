package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hub/store"
)

func (o opener) testSourcesAndFleet(t *testing.T) {
	t.Run("source statuses are replaced and listed by name", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		got, err := s.ListSourceStatuses(ctx)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("ListSourceStatuses on an empty store = %+v, want none", got)
		}
		platform := store.SourceStatus{Name: "platform", URL: "https://git.example/platform.git", Error: "dial tcp: timeout", CheckedAt: at(0)}
		apps := store.SourceStatus{Name: "apps", URL: "https://git.example/apps.git", Revision: "main@sha1:aa", Digest: "sha256:bb", CheckedAt: at(time.Second)}
		zeta := store.SourceStatus{Name: "zeta", URL: "oci://registry.example/zeta"}
		for _, st := range []store.SourceStatus{platform, zeta, apps} {
			must(t, s.PutSourceStatus(ctx, st))
		}
		// A later poll of platform succeeds: every field is replaced, the error cleared.
		platform = store.SourceStatus{Name: "platform", URL: "https://git.example/platform.git", Revision: "main@sha1:cc", Digest: "sha256:dd", CheckedAt: at(time.Minute)}
		must(t, s.PutSourceStatus(ctx, platform))

		got, err = s.ListSourceStatuses(ctx)
		must(t, err)
		if diff := cmp.Diff([]store.SourceStatus{apps, platform, zeta}, got, opts); diff != "" {
			t.Errorf("ListSourceStatuses (-want +got):\n%s", diff)
		}
		for _, st := range got {
			wantUTC(t, st.Name+": CheckedAt", st.CheckedAt)
		}
	})

	t.Run("fleet status is zero until set, then replaced", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		for i, step := range []struct {
			put  *store.FleetStatus
			want store.FleetStatus
		}{
			{nil, store.FleetStatus{}},
			{&store.FleetStatus{Revision: "main@sha1:01", UpdatedAt: at(0)}, store.FleetStatus{Revision: "main@sha1:01", UpdatedAt: at(0)}},
			{&store.FleetStatus{Revision: "main@sha1:01", Error: "fleet.yaml: line 3: unknown field", UpdatedAt: at(time.Second)},
				store.FleetStatus{Revision: "main@sha1:01", Error: "fleet.yaml: line 3: unknown field", UpdatedAt: at(time.Second)}},
			{&store.FleetStatus{Revision: "main@sha1:02", UpdatedAt: at(time.Minute)}, store.FleetStatus{Revision: "main@sha1:02", UpdatedAt: at(time.Minute)}},
		} {
			if step.put != nil {
				must(t, s.PutFleetStatus(ctx, *step.put))
			}
			got, err := s.GetFleetStatus(ctx)
			must(t, err)
			if diff := cmp.Diff(step.want, got, opts); diff != "" {
				t.Errorf("step %d: GetFleetStatus (-want +got):\n%s", i, diff)
			}
			wantUTC(t, "UpdatedAt", got.UpdatedAt)
		}
	})
}

// testTimes checks what every time field promises: the instant comes back, in UTC, and the
// zero time stays zero.
func (o opener) testTimes(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"zero", time.Time{}},
		{"in another zone", at(0)},
		{"in UTC", at(0).UTC()},
		{"before 1970", time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)},
		{"local", time.Date(2030, 1, 1, 0, 0, 0, 1000, time.Local)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, s := t.Context(), o.new(t)
			must(t, s.AddCluster(ctx, store.Cluster{Name: "c", CreatedAt: tc.t, LastSeen: tc.t}))
			must(t, s.PutSourceStatus(ctx, store.SourceStatus{Name: "src", CheckedAt: tc.t}))
			must(t, s.PutFleetStatus(ctx, store.FleetStatus{UpdatedAt: tc.t}))
			_, err := s.IngestReport(ctx, "c", 1, []store.AssignmentStatus{{Release: "r", ReportedAt: tc.t}})
			must(t, err)

			c, err := s.GetCluster(ctx, "c")
			must(t, err)
			srcs, err := s.ListSourceStatuses(ctx)
			must(t, err)
			fleet, err := s.GetFleetStatus(ctx)
			must(t, err)
			sts, err := s.ListStatuses(ctx)
			must(t, err)
			if len(srcs) != 1 || len(sts) != 1 {
				t.Fatalf("got %d sources and %d statuses, want 1 each", len(srcs), len(sts))
			}
			for what, got := range map[string]time.Time{
				"Cluster.CreatedAt":           c.CreatedAt,
				"Cluster.LastSeen":            c.LastSeen,
				"SourceStatus.CheckedAt":      srcs[0].CheckedAt,
				"FleetStatus.UpdatedAt":       fleet.UpdatedAt,
				"AssignmentStatus.ReportedAt": sts[0].ReportedAt,
			} {
				if !got.Equal(tc.t) || got.IsZero() != tc.t.IsZero() {
					t.Errorf("%s = %v, want %v", what, got, tc.t)
				}
				wantUTC(t, what, got)
			}
		})
	}
}
