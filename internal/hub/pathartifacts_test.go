package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/gittest"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/desired"
)

// TestArtifactsPerReleasePath: with a release whose path is clusters/{{ .Cluster.Name }}
// over a shared base, each cluster's desired state names an artifact holding its own
// directory and the base, and no other cluster's; a cluster cannot download another's; a
// path every cluster shares has one artifact; a commit touching one cluster's directory
// changes that cluster's artifact only, the others move to the new revision with the same
// artifact; the artifacts of the old revision are collected.
func TestArtifactsPerReleasePath(t *testing.T) {
	t.Parallel()
	clusters := []string{"alpha", "bravo", "charlie"}
	repoDir, fleetDir := t.TempDir(), t.TempDir()
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n- settings.yaml\n"),
		"base/settings.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: info}\n"),
		"common/quota.yaml":       []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: quota}\ndata: {cpu: '2'}\n"),
		"README.md":               []byte("not for any cluster\n"),
	}
	for _, c := range clusters {
		files["clusters/"+c+"/kustomization.yaml"] = []byte("resources:\n- ../../base\n- own.yaml\n")
		files["clusters/"+c+"/own.yaml"] = []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own}\ndata: {cluster: %s}\n", c))
	}
	gittest.CommitFiles(t, repoDir, files)
	fleet := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: file://%s, branch: main}
  interval: 2s
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: own}
spec:
  source: apps
  path: clusters/{{ .Cluster.Name }}
  targets: [{selector: {}}]
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: common}
spec:
  source: apps
  path: common
  targets: [{selector: {}}]
`, repoDir)
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	th := startHub(t, fleetDir, nil)
	agents := map[string]*testAgent{}
	for _, c := range clusters {
		agents[c] = th.addAgent(t, c, nil)
	}

	first := waitAssigned(t, th, clusters, func(map[string]desired.Assignment) bool { return true })
	rev1 := first["alpha"]["own"].Revision
	for _, c := range clusters {
		own := first[c]["own"]
		got := artifactFiles(t, th, agents[c], own.Digest)
		want := []string{"base/kustomization.yaml", "base/settings.yaml", "clusters/" + c + "/kustomization.yaml", "clusters/" + c + "/own.yaml"}
		if !slices.Equal(got, want) {
			t.Errorf("cluster %s: its artifact %s holds %v, want %v (its directory and the base, nothing else)", c, own.Digest, got, want)
		}
		if own.Path != "clusters/"+c || own.Revision != rev1 {
			t.Errorf("cluster %s: path %q at %s, want clusters/%s at the source's revision %s", c, own.Path, own.Revision, c, rev1)
		}
		if got := artifactFiles(t, th, agents[c], first[c]["common"].Digest); !slices.Equal(got, []string{"common/quota.yaml"}) {
			t.Errorf("cluster %s: artifact of path common holds %v", c, got)
		}
		if first[c]["common"].Digest != first["alpha"]["common"].Digest {
			t.Errorf("path common has artifact %s on %s and %s on alpha: one path, one artifact", first[c]["common"].Digest, c, first["alpha"]["common"].Digest)
		}
	}
	if first["alpha"]["own"].Digest == first["bravo"]["own"].Digest {
		t.Fatal("alpha and bravo share an artifact although their directories differ")
	}
	if code := download(t, th, agents["alpha"], first["bravo"]["own"].Digest, nil); code != http.StatusForbidden {
		t.Errorf("alpha downloading bravo's artifact: %d, want 403", code)
	}
	statuses, err := th.store.ListSourceStatuses(t.Context())
	if err != nil || len(statuses) != 1 {
		t.Fatalf("source statuses %v, %v", statuses, err)
	}
	src := statuses[0]
	if code := download(t, th, agents["alpha"], src.Digest, nil); code != http.StatusForbidden {
		t.Errorf("alpha downloading the whole source's artifact %s: %d, want 403: no cluster is assigned it", src.Digest, code)
	}

	// A commit that touches alpha's directory only.
	commitMore(t, repoDir, map[string][]byte{"clusters/alpha/own.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own}\ndata: {cluster: alpha, v: '2'}\n")})
	second := waitAssigned(t, th, clusters, func(m map[string]desired.Assignment) bool { return m["own"].Revision != rev1 })
	for _, c := range clusters {
		for _, r := range []string{"own", "common"} {
			before, after := first[c][r], second[c][r]
			if after.Revision == rev1 {
				t.Errorf("cluster %s, release %s: still at revision %s", c, r, rev1)
			}
			if changed := before.Digest != after.Digest; changed != (c == "alpha" && r == "own") {
				t.Errorf("cluster %s, release %s: artifact %s -> %s after a commit to clusters/alpha only", c, r, before.Digest, after.Digest)
			}
		}
	}
	// The old revision's artifacts nobody refers to any more are collected.
	eventually.Within(t, time.Minute, func() error {
		if old, source := th.artifacts.Has(first["alpha"]["own"].Digest), th.artifacts.Has(src.Digest); old || source {
			return fmt.Errorf("alpha's old artifact (%t) or the old source artifact (%t) still stored after nothing refers to it", old, source)
		}
		return nil
	})
	if !th.artifacts.Has(second["bravo"]["own"].Digest) {
		t.Error("bravo's artifact, still assigned, was collected")
	}
}

// waitAssigned waits until every cluster's desired state assigns own and common and done
// accepts each, and returns them by cluster and release.
func waitAssigned(t *testing.T, th *testHub, clusters []string, done func(map[string]desired.Assignment) bool) map[string]map[string]desired.Assignment {
	t.Helper()
	out := map[string]map[string]desired.Assignment{}
	for _, c := range clusters {
		eventually.Within(t, time.Minute, func() error {
			m := map[string]desired.Assignment{}
			ds, err := th.store.GetDesiredState(t.Context(), c)
			if err != nil {
				return fmt.Errorf("cluster %s: %w", c, err)
			}
			as, err := desired.Decode(ds.Document)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				m[a.Release] = a
			}
			if len(m) != 2 || !done(m) {
				return fmt.Errorf("cluster %s: desired state %v not as awaited", c, m)
			}
			out[c] = m
			return nil
		})
	}
	return out
}

// download fetches artifact digest as agent a, writing it to w (when 200), and returns the
// status code.
func download(t *testing.T, th *testHub, a *testAgent, digest string, w io.Writer) int {
	t.Helper()
	url := th.AgentURL() + "/artifacts/sha256/" + strings.TrimPrefix(digest, "sha256:")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := a.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && w != nil {
		if _, err := io.Copy(w, resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// artifactFiles downloads artifact digest as agent a, checks its digest, unpacks it and
// lists its files.
func artifactFiles(t *testing.T, th *testHub, a *testAgent, digest string) []string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "artifact.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := sha256.New()
	if code := download(t, th, a, digest, io.MultiWriter(f, sum)); code != http.StatusOK {
		t.Fatalf("download of its own artifact %s: %d", digest, code)
	}
	if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); got != digest {
		t.Fatalf("artifact %s downloaded with digest %s", digest, got)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := artifact.Unpack(t.Context(), f, dir, artifact.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
