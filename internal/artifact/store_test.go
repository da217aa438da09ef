package artifact

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func treeWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files, sortedKeys(files))
	return dir
}

func TestStorePutDir(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	dir := treeWith(t, sampleTree)
	ctx := context.Background()

	digest, size, err := s.PutDir(ctx, dir)
	if err != nil {
		t.Fatalf("PutDir: %v", err)
	}
	p, err := s.Path(digest)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Dir(), "sha256", strings.TrimPrefix(digest, "sha256:")+".tar.gz"); p != want {
		t.Errorf("Path = %s, want %s", p, want)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Errorf("stored size %d, PutDir said %d", fi.Size(), size)
	}
	if err := VerifyFile(p, digest); err != nil {
		t.Errorf("VerifyFile: %v", err)
	}
	if !s.Has(digest) {
		t.Error("Has = false after PutDir")
	}

	// Idempotent: the same tree again gives the same digest and leaves the
	// stored file as it was.
	mtime := fi.ModTime()
	digest2, _, err := s.PutDir(ctx, dir)
	if err != nil || digest2 != digest {
		t.Fatalf("second PutDir = %s, %v; want %s", digest2, err, digest)
	}
	if fi2, _ := os.Stat(p); !fi2.ModTime().Equal(mtime) {
		t.Error("second PutDir rewrote the artifact")
	}

	f, err := s.Open(digest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dst := filepath.Join(t.TempDir(), "out")
	if err := Unpack(ctx, f, dst, DefaultLimits()); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	assertNoTemp(t, s)
}

func TestStoreConcurrentPutDir(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	dir := treeWith(t, sampleTree)
	other := treeWith(t, map[string]string{"x": "y"})
	digests := make([]string, 8)
	var g errgroup.Group
	for i := range digests {
		g.Go(func() error {
			src := dir
			if i%2 == 1 {
				src = other
			}
			d, _, err := s.PutDir(context.Background(), src)
			digests[i] = d
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("PutDir: %v", err)
	}
	for i, d := range digests {
		if d != digests[i%2] {
			t.Errorf("digest %d = %s, want %s", i, d, digests[i%2])
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("List = %v, want 2 artifacts", list)
	}
	assertNoTemp(t, s)
}

func TestStorePutDirFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	dir := treeWith(t, map[string]string{"l": "->/etc/passwd"})
	if _, _, err := s.PutDir(context.Background(), dir); err == nil {
		t.Fatal("PutDir accepted an absolute symlink")
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List = %v after a failed PutDir", list)
	}
	assertNoTemp(t, s)
}

func assertNoTemp(t *testing.T, s *Store) {
	t.Helper()
	names, err := readDirNames(filepath.Join(s.Dir(), "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, tempPrefix) {
			t.Errorf("temporary file left behind: %s", n)
		}
	}
}

func TestStoreGC(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	ctx := context.Background()
	var digests []string
	for _, content := range []string{"a", "b", "c"} {
		d, _, err := s.PutDir(ctx, treeWith(t, map[string]string{"f": content}))
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	// A file that is not an artifact must survive GC.
	stray := filepath.Join(s.Dir(), "sha256", "README")
	if err := os.WriteFile(stray, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}

	keep := map[string]bool{digests[1]: true}
	removed, err := s.GC(keep)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	wantRemoved := []string{digests[0], digests[2]}
	if wantRemoved[0] > wantRemoved[1] {
		wantRemoved[0], wantRemoved[1] = wantRemoved[1], wantRemoved[0]
	}
	if diff := cmp.Diff(wantRemoved, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	list, _ := s.List()
	if diff := cmp.Diff([]string{digests[1]}, list); diff != "" {
		t.Errorf("List after GC (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("GC removed a file that is not an artifact: %v", err)
	}
}

func TestStorePathRejectsBadDigests(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	hex := strings.Repeat("ab", 32)
	good := "sha256:" + hex
	if _, err := s.Path(good); err != nil {
		t.Fatalf("Path(%q) = %v", good, err)
	}
	bad := []string{
		"",
		"sha256:",
		hex,
		"sha512:" + hex,
		"sha256:" + strings.ToUpper(hex),
		"sha256:" + hex[:63],
		"sha256:" + hex + "0",
		"sha256:../../../../etc/passwd",
		"sha256:" + hex[:60] + "/../",
		"sha256:" + hex[:63] + "\x00",
		"SHA256:" + hex,
		" sha256:" + hex,
	}
	for _, d := range bad {
		p, err := s.Path(d)
		if err == nil {
			t.Errorf("Path(%q) = %q, want an error", d, p)
			continue
		}
		if s.Has(d) {
			t.Errorf("Has(%q) = true", d)
		}
		if _, err := s.Open(d); err == nil {
			t.Errorf("Open(%q) succeeded", d)
		}
	}
}
