package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/store"
)

// readCheckpoint returns the audit checkpoint of release on cluster, leaving it as it is.
func readCheckpoint(t *testing.T, ctx context.Context, s store.Store, cluster, release string) (audit.Checkpoint, bool) {
	t.Helper()
	var got audit.Checkpoint
	var found bool
	must(t, s.UpdateAuditCheckpoint(ctx, cluster, release, func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
		got, found = cp, ok
		return cp, ok, nil
	}))
	return got, found
}

// putCheckpoint stores cp as the checkpoint of release on cluster.
func putCheckpoint(t *testing.T, ctx context.Context, s store.Store, cluster, release string, cp audit.Checkpoint) {
	t.Helper()
	must(t, s.UpdateAuditCheckpoint(ctx, cluster, release, func(audit.Checkpoint, bool) (audit.Checkpoint, bool, error) {
		return cp, true, nil
	}))
}

func (o opener) testAuditCheckpoints(t *testing.T) {
	full := audit.Checkpoint{
		Revision: "main@sha1:aaa", Digest: "sha256:111", Phase: "Ready", Health: "Current",
		Since: at(0), ChainedAt: at(time.Hour), FirstVerified: at(70 * time.Minute), LastVerified: at(90 * time.Minute), Count: 3,
	}
	fresh := audit.Checkpoint{Revision: "main@sha1:bbb", Digest: "sha256:222", Phase: "Progressing", Since: at(0), ChainedAt: at(0)}

	tests := []struct {
		name string
		cp   audit.Checkpoint
	}{
		{"round-trips a checkpoint with an open window", full},
		{"keeps the zero times of a checkpoint with no window zero", fresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, s := t.Context(), o.new(t)
			addCluster(t, ctx, s, "edge-1")
			if _, ok := readCheckpoint(t, ctx, s, "edge-1", "web"); ok {
				t.Fatal("a checkpoint before any was stored")
			}
			putCheckpoint(t, ctx, s, "edge-1", "web", tt.cp)
			got, ok := readCheckpoint(t, ctx, s, "edge-1", "web")
			if !ok {
				t.Fatal("the stored checkpoint is missing")
			}
			if diff := cmp.Diff(tt.cp, got, opts); diff != "" {
				t.Errorf("checkpoint (-want +got):\n%s", diff)
			}
			wantUTC(t, "checkpoint", got.Since, got.ChainedAt, got.FirstVerified, got.LastVerified)
		})
	}

	t.Run("replaces a checkpoint and keeps each assignment's apart", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		addCluster(t, ctx, s, "edge-2")
		putCheckpoint(t, ctx, s, "edge-1", "web", full)
		putCheckpoint(t, ctx, s, "edge-1", "web", fresh)
		putCheckpoint(t, ctx, s, "edge-1", "db", full)
		putCheckpoint(t, ctx, s, "edge-2", "web", full)
		for _, c := range []struct {
			cluster, release string
			want             audit.Checkpoint
		}{{"edge-1", "web", fresh}, {"edge-1", "db", full}, {"edge-2", "web", full}} {
			got, ok := readCheckpoint(t, ctx, s, c.cluster, c.release)
			if diff := cmp.Diff(c.want, got, opts); !ok || diff != "" {
				t.Errorf("checkpoint of %s on %s (found %v) (-want +got):\n%s", c.release, c.cluster, ok, diff)
			}
		}
	})

	t.Run("deletes a checkpoint fn does not keep", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		putCheckpoint(t, ctx, s, "edge-1", "web", full)
		must(t, s.UpdateAuditCheckpoint(ctx, "edge-1", "web", func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
			return audit.Checkpoint{}, false, nil
		}))
		if cp, ok := readCheckpoint(t, ctx, s, "edge-1", "web"); ok {
			t.Errorf("deleted checkpoint still there: %+v", cp)
		}
	})

	t.Run("changes nothing when fn fails, and returns its error", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		putCheckpoint(t, ctx, s, "edge-1", "web", full)
		boom := errors.New("boom")
		err := s.UpdateAuditCheckpoint(ctx, "edge-1", "web", func(audit.Checkpoint, bool) (audit.Checkpoint, bool, error) {
			return fresh, true, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("UpdateAuditCheckpoint with a failing fn: err = %v, want it to wrap %v", err, boom)
		}
		got, _ := readCheckpoint(t, ctx, s, "edge-1", "web")
		if diff := cmp.Diff(full, got, opts); diff != "" {
			t.Errorf("checkpoint after a failed update (-want +got):\n%s", diff)
		}
	})

	t.Run("refuses an unknown cluster without calling fn", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		called := false
		err := s.UpdateAuditCheckpoint(ctx, "ghost", "web", func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
			called = true
			return cp, true, nil
		})
		if !errors.Is(err, store.ErrNotFound) || called {
			t.Errorf("UpdateAuditCheckpoint(ghost): err = %v, fn called %v; want ErrNotFound, not called", err, called)
		}
	})

	t.Run("RemoveCluster deletes the cluster's checkpoints", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		putCheckpoint(t, ctx, s, "edge-1", "web", full)
		must(t, s.RemoveCluster(ctx, "edge-1"))
		addCluster(t, ctx, s, "edge-1")
		if cp, ok := readCheckpoint(t, ctx, s, "edge-1", "web"); ok {
			t.Errorf("a re-added cluster has its old checkpoint: %+v", cp)
		}
	})

	t.Run("concurrent updates of one checkpoint lose none", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				errs[i] = s.UpdateAuditCheckpoint(ctx, "edge-1", "web", func(cp audit.Checkpoint, ok bool) (audit.Checkpoint, bool, error) {
					cp.Count++
					return cp, true, nil
				})
			})
		}
		wg.Wait()
		must(t, errors.Join(errs...))
		if got, _ := readCheckpoint(t, ctx, s, "edge-1", "web"); got.Count != n {
			t.Errorf("Count after %d concurrent increments = %d", n, got.Count)
		}
	})
}
