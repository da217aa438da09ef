package hub

import (
	"os"
	"path/filepath"
	"testing"
)

// An artifact packed while a reschedule runs was not in the keep set that reschedule took at
// its start; garbage collection must still leave it, or agents assigned it get 404 until the
// next poll packs it again.
func TestCollectKeepsArtifactsPackedDuringReschedule(t *testing.T) {
	th := startHub(t, "", nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest, _, err := th.artifacts.PutDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := th.ctrl

	c.mu.Lock()
	c.fresh[digest] = true // the poll packed it; its result is not applied yet
	c.mu.Unlock()
	c.collect(t.Context(), map[string]bool{}) // keep as taken before the pack
	if !th.artifacts.Has(digest) {
		t.Fatal("an artifact packed during the reschedule was garbage-collected")
	}

	c.mu.Lock()
	delete(c.fresh, digest) // applied and then replaced: nothing refers to it any more
	c.mu.Unlock()
	c.collect(t.Context(), map[string]bool{})
	if th.artifacts.Has(digest) {
		t.Fatal("an artifact nothing refers to was kept")
	}
}
