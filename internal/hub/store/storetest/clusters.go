package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/hub/store"
)

func (o opener) testClusters(t *testing.T) {
	t.Run("round-trips a cluster", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		want := store.Cluster{
			Name:         "edge-1",
			Labels:       map[string]string{"env": "prod", "region": "eu-west", "quote": `a"b\c`, "unicode": "ünï"},
			CreatedAt:    at(0),
			LastSeen:     at(5 * time.Second),
			AgentVersion: "v1.2.3",
		}
		must(t, s.AddCluster(ctx, want))
		got, err := s.GetCluster(ctx, "edge-1")
		must(t, err)
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("GetCluster (-want +got):\n%s", diff)
		}
	})

	t.Run("keeps a zero LastSeen zero", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		must(t, s.AddCluster(ctx, store.Cluster{Name: "new", CreatedAt: at(0)}))
		got, err := s.GetCluster(ctx, "new")
		must(t, err)
		if !got.LastSeen.IsZero() {
			t.Errorf("LastSeen = %v, want zero", got.LastSeen)
		}
	})

	t.Run("refuses a taken name", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		err := s.AddCluster(ctx, store.Cluster{Name: "edge-1", Labels: map[string]string{"other": "x"}})
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("AddCluster twice: err = %v, want ErrExists", err)
		}
		got, err := s.GetCluster(ctx, "edge-1")
		must(t, err)
		if diff := cmp.Diff(map[string]string{"app": "edge-1"}, got.Labels, opts); diff != "" {
			t.Errorf("labels after refused AddCluster (-want +got):\n%s", diff)
		}
	})

	t.Run("lists clusters by name", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		got, err := s.ListClusters(ctx)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("ListClusters on an empty store = %v, want none", got)
		}
		// Byte order, whatever the database's collation: capitals first, no folding of
		// case or punctuation.
		for _, n := range []string{"m", "a", "z", "b", "a-2", "B", "a_1", "Z"} {
			addCluster(t, ctx, s, n)
		}
		got, err = s.ListClusters(ctx)
		must(t, err)
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if diff := cmp.Diff([]string{"B", "Z", "a", "a-2", "a_1", "b", "m", "z"}, names); diff != "" {
			t.Errorf("ListClusters order (-want +got):\n%s", diff)
		}
	})

	t.Run("replaces labels", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			labels map[string]string
		}{
			{"with other labels", map[string]string{"env": "staging"}},
			{"with more labels", map[string]string{"app": "x", "env": "prod", "tier": "1"}},
			{"with none", map[string]string{}},
			{"with nil", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, s := t.Context(), o.new(t)
				addCluster(t, ctx, s, "edge-1")
				must(t, s.SetClusterLabels(ctx, "edge-1", tc.labels))
				got, err := s.GetCluster(ctx, "edge-1")
				must(t, err)
				if diff := cmp.Diff(tc.labels, got.Labels, opts); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("touch records last seen and agent version", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		must(t, s.TouchCluster(ctx, "edge-1", at(10*time.Second), "v1.0.0"))
		must(t, s.TouchCluster(ctx, "edge-1", at(20*time.Second), "v1.1.0"))
		got, err := s.GetCluster(ctx, "edge-1")
		must(t, err)
		want := store.Cluster{Name: "edge-1", Labels: map[string]string{"app": "edge-1"}, CreatedAt: at(0), LastSeen: at(20 * time.Second), AgentVersion: "v1.1.0"}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("cluster after TouchCluster (-want +got):\n%s", diff)
		}
	})

	t.Run("touch many records each in one call and skips removed clusters", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		for _, c := range []string{"edge-1", "edge-2", "edge-3"} {
			addCluster(t, ctx, s, c)
		}
		must(t, s.TouchClusters(ctx, []store.Touch{
			{Cluster: "edge-3", Seen: at(30 * time.Second), AgentVersion: "v3.0.0"},
			{Cluster: "gone", Seen: at(40 * time.Second), AgentVersion: "v4.0.0"},
			{Cluster: "edge-1", Seen: at(10 * time.Second), AgentVersion: "v1.0.0"},
		}))
		must(t, s.TouchClusters(ctx, nil))
		got, err := s.ListClusters(ctx)
		must(t, err)
		want := []store.Cluster{
			{Name: "edge-1", Labels: map[string]string{"app": "edge-1"}, CreatedAt: at(0), LastSeen: at(10 * time.Second), AgentVersion: "v1.0.0"},
			{Name: "edge-2", Labels: map[string]string{"app": "edge-2"}, CreatedAt: at(0)},
			{Name: "edge-3", Labels: map[string]string{"app": "edge-3"}, CreatedAt: at(0), LastSeen: at(30 * time.Second), AgentVersion: "v3.0.0"},
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("clusters after TouchClusters (-want +got):\n%s", diff)
		}
	})

	t.Run("unknown cluster is not found", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"GetCluster", func() error { _, err := s.GetCluster(ctx, "nope"); return err }},
			{"SetClusterLabels", func() error { return s.SetClusterLabels(ctx, "nope", map[string]string{"a": "b"}) }},
			{"TouchCluster", func() error { return s.TouchCluster(ctx, "nope", at(0), "v1") }},
			{"RemoveCluster", func() error { return s.RemoveCluster(ctx, "nope") }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.call(); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("err = %v, want ErrNotFound", err)
				}
			})
		}
		got, err := s.ListClusters(ctx)
		must(t, err)
		if len(got) != 1 {
			t.Errorf("ListClusters = %v, want only edge-1: a call on an unknown cluster must not create it", got)
		}
	})
}
