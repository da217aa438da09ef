package pathpack

import (
	"context"
	"fmt"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// BenchmarkApplyCached is what narrowing adds to a reschedule in steady state (every
// (source, path) packed before): 1,000 clusters x 20 releases, each cluster on its own path.
func BenchmarkApplyCached(b *testing.B) {
	const clusters, releases = 1000, 20
	store, err := artifact.NewStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"base/kustomization.yaml": "resources:\n- cm.yaml\n", "base/cm.yaml": cm("base")}
	for c := range clusters {
		files[fmt.Sprintf("clusters/c%d/kustomization.yaml", c)] = "resources:\n- ../../base\n"
	}
	dir := b.TempDir()
	writeTree(b, dir, files)
	src, _, err := store.PutDir(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	fleet := &v1alpha1.Fleet{Sources: []v1alpha1.Source{{Metadata: v1alpha1.ObjectMeta{Name: "git"}}}}
	for r := range releases {
		fleet.Releases = append(fleet.Releases, v1alpha1.Release{Metadata: v1alpha1.ObjectMeta{Name: fmt.Sprintf("r%02d", r)}})
	}
	plan := func() *schedule.Plan {
		p := &schedule.Plan{Assignments: map[string][]desired.Assignment{}}
		for c := range clusters {
			for r := range releases {
				p.Assignments[fmt.Sprintf("c%d", c)] = append(p.Assignments[fmt.Sprintf("c%d", c)],
					desired.Assignment{Release: fmt.Sprintf("r%02d", r), Source: "git", Revision: "r1", Digest: src, Path: fmt.Sprintf("clusters/c%d", c)})
			}
		}
		return p
	}
	p := New(Options{Store: store, WorkDir: b.TempDir()})
	defer p.Close()
	p.Apply(context.Background(), fleet, plan(), nil) // packs every path once
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		pl := plan()
		b.StartTimer()
		p.Apply(context.Background(), fleet, pl, nil)
		if len(pl.Problems) > 0 {
			b.Fatal(pl.Problems)
		}
	}
}
