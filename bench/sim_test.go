package bench

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/fleetsim"
)

// TestFleetSimulator is the simulator's smoke in the unit run, so that it cannot rot: a few
// clusters (5 x 2 releases x 5 objects) whose release paths are per cluster (clusters/{{ .Cluster.Name }}/<release>, a
// kustomization reaching a shared base/), both modes, and checks what a reader of its report
// relies on: every assignment converged in both waves, the simulated clusters received
// exactly one write per object per wave, traffic was counted both ways, and pull and push
// left every cluster with the same objects. As invariants of per-path artifacts, recorded at
// the agents' end: every artifact a cluster downloaded holds only files under its own
// directory and the base (no other cluster's), and only clusters whose desired state names
// an artifact download it. Bigger shapes run with `flotilla-bench fleet` only.
func TestFleetSimulator(t *testing.T) {
	t.Parallel()
	const clusters, releases, objects = 5, 2, 5
	rep, err := fleetsim.Run(t.Context(), fleetsim.Options{
		Binary: buildCmd(t, "flotilla-bench"), Dir: t.TempDir(),
		Clusters: clusters, Releases: releases, Objects: objects, Push: true,
		Layout: fleetsim.LayoutPerCluster, RecordDownloads: true,
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
	checkDownloads(t, rep.Downloads, clusters)
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "SIMULATED") || !strings.Contains(table.String(), "pull / push") {
		t.Errorf("the table does not say that spokes are simulated or lacks the ratios:\n%s", table.String())
	}
}

// checkDownloads checks per-path artifacts at the agents' end: each cluster downloaded
// something, only artifacts its desired state named, and each holds only files under the
// cluster's own directory (clusters/<cluster>/) or the shared base/.
func checkDownloads(t *testing.T, d *fleetsim.DownloadsReport, clusters int) {
	t.Helper()
	if d == nil || len(d.Clusters) != clusters {
		t.Fatalf("downloads not recorded for every cluster: %+v", d)
	}
	files := map[string][]string{} // digest -> files, unpacked once
	for _, c := range d.Clusters {
		if len(c.Downloaded) == 0 {
			t.Errorf("cluster %s downloaded no artifact", c.Cluster)
		}
		for _, digest := range c.Downloaded {
			if !slices.Contains(c.Desired, digest) {
				t.Errorf("cluster %s downloaded %s, which its desired state never named (it named %v)", c.Cluster, digest, c.Desired)
			}
			if _, ok := files[digest]; !ok {
				files[digest] = artifactFiles(t, d.Dir, digest)
			}
			var leaked []string
			for _, f := range files[digest] {
				if !strings.HasPrefix(f, "clusters/"+c.Cluster+"/") && !strings.HasPrefix(f, "base/") {
					leaked = append(leaked, f)
				}
			}
			if len(leaked) > 0 {
				t.Errorf("cluster %s received artifact %s with %d files none of its releases uses, e.g. %v", c.Cluster, digest, len(leaked), leaked[:min(len(leaked), 3)])
			}
		}
	}
}

// artifactFiles unpacks the kept copy of an artifact with the agent's unpacker and lists its
// regular files, slash-separated and relative to its root.
func artifactFiles(t *testing.T, dir, digest string) []string {
	t.Helper()
	hex := strings.TrimPrefix(digest, "sha256:")
	f, err := os.Open(filepath.Join(dir, hex))
	if err != nil {
		t.Fatalf("artifact %s: no copy kept at the agents' end: %v", digest, err)
	}
	defer f.Close()
	dst := filepath.Join(t.TempDir(), hex)
	if err := artifact.Unpack(t.Context(), f, dst, artifact.DefaultLimits()); err != nil {
		t.Fatalf("artifact %s: %v", digest, err)
	}
	var out []string
	err = filepath.WalkDir(dst, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dst, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatalf("artifact %s: list: %v", digest, err)
	}
	return out
}
