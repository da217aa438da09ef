package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hub/source"
)

// chartRepo is a Helm source fetcher serving one chart version at whatever repository the
// source names; like the real one, it writes nothing when the revision is the previous one.
type chartRepo struct{ fetches, writes int }

func (r *chartRepo) Fetch(_ context.Context, s v1alpha1.Source, prev, dst string) (source.Fetched, error) {
	r.fetches++
	res := source.Fetched{Revision: "1.0.0@sha256:aa", URL: s.Spec.Helm.Repository}
	if prev == res.Revision {
		res.Unchanged = true
		return res, nil
	}
	r.writes++
	return res, os.WriteFile(filepath.Join(dst, "Chart.yaml"), []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n"), 0o644)
}

// A source moved to another repository that has the same revision is fetched from there: the
// fetcher's Unchanged (it compares revisions only) must not make the hub pack an empty
// directory.
func TestMovedSourceIsFetchedAgain(t *testing.T) {
	t.Parallel()
	st := restartedHub(t)
	c := newTestController(t, st, clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	repo := &chartRepo{}
	c.d.Helm = repo
	src := func(url string) v1alpha1.Source {
		return v1alpha1.Source{Metadata: v1alpha1.ObjectMeta{Name: "web"}, Spec: v1alpha1.SourceSpec{Helm: &v1alpha1.HelmSource{Repository: url, Chart: "web"}}}
	}
	ctx := context.Background()
	first, _, err := c.pollSource(ctx, src("https://charts.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	c.artifacts["web"] = first

	again, _, err := c.pollSource(ctx, src("https://charts.example.com"))
	if err != nil || again != first || repo.writes != 1 {
		t.Fatalf("unchanged source: artifact %+v (err %v), %d writes; want the first artifact %+v and no new write", again, err, repo.writes, first)
	}

	moved, _, err := c.pollSource(ctx, src("https://mirror.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if moved.URL != "https://mirror.example.com" || moved.Digest != first.Digest {
		t.Fatalf("moved source: artifact %+v, want URL https://mirror.example.com and the same content (digest %s)", moved, first.Digest)
	}
	arts := c.d.Artifacts.(*artifact.Store)
	dir := t.TempDir()
	f, err := arts.Open(moved.Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := artifact.Unpack(ctx, f, dir, artifact.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		t.Fatalf("the moved source's artifact has no chart: %v", err)
	}
}
