package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/fleetsim"
)

// TestFleetSimulator runs the simulator on a small fleet (20 clusters x 3 releases x 10
// objects), both modes, and checks what a reader of its report relies on: every assignment
// converged in both waves, the simulated clusters received exactly one write per object per
// wave, traffic was counted both ways, and pull and push left every cluster with the same
// objects. Bigger shapes run with `flotilla bench fleet` only.
func TestFleetSimulator(t *testing.T) {
	const clusters, releases, objects = 20, 3, 10
	rep, err := fleetsim.Run(t.Context(), fleetsim.Options{
		Binary: buildFlotillaT(t), Dir: t.TempDir(),
		Clusters: clusters, Releases: releases, Objects: objects, Push: true,
		SourceInterval: 2 * time.Second, PollInterval: 200 * time.Millisecond, Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = clusters * releases * objects
	if rep.Shape.Objects != want || rep.Shape.Assignments != clusters*releases {
		t.Errorf("shape: %d objects in %d assignments, want %d in %d", rep.Shape.Objects, rep.Shape.Assignments, want, clusters*releases)
	}
	for mode, waves := range map[string][]fleetsim.Wave{"pull": rep.Pull, "push": rep.Push} {
		if len(waves) != 2 {
			t.Fatalf("%s: %d waves, want 2", mode, len(waves))
		}
		for _, w := range waves {
			if w.ObjectsWritten != want {
				t.Errorf("%s %s: %d objects written at the clusters, want %d (every object once)", mode, w.Name, w.ObjectsWritten, want)
			}
			if w.BytesHubToSpokes <= 0 || w.BytesSpokesToHub <= 0 || w.Requests <= 0 {
				t.Errorf("%s %s: traffic not counted: %d bytes to spokes, %d to hub, %d requests", mode, w.Name, w.BytesHubToSpokes, w.BytesSpokesToHub, w.Requests)
			}
			if w.HubCPUSeconds < 0 || w.HubPeakRSSBytes <= 0 || w.Commit == "" {
				t.Errorf("%s %s: hub CPU %.2fs, peak %d bytes, commit %q", mode, w.Name, w.HubCPUSeconds, w.HubPeakRSSBytes, w.Commit)
			}
		}
	}
	if rep.Pull[0].Commit == rep.Pull[1].Commit || rep.Pull[1].Commit != rep.Push[1].Commit {
		t.Errorf("commits: pull %q then %q, push wave 2 %q", rep.Pull[0].Commit, rep.Pull[1].Commit, rep.Push[1].Commit)
	}
	if a := rep.Agreement; a == nil || !a.Agree || a.Matching != clusters {
		t.Errorf("final objects, pull vs push: %+v, want all %d clusters identical", a, clusters)
	}
	if len(rep.PullOverPush) != 2 {
		t.Errorf("ratios: %+v", rep.PullOverPush)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "SIMULATED") || !strings.Contains(table.String(), "pull / push") {
		t.Errorf("the table does not say that spokes are simulated or lacks the ratios:\n%s", table.String())
	}
}

func buildFlotillaT(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "flotilla")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", out, "github.com/flotilla/flotilla/cmd/flotilla")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build flotilla: %v\n%s", err, msg)
	}
	return out
}
