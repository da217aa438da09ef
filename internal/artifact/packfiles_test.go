package artifact

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func packFiles(t *testing.T, dir string, names []string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	digest, _, err := PackFiles(context.Background(), dir, names, &buf)
	if err != nil {
		t.Fatalf("PackFiles(%v): %v", names, err)
	}
	return digest, buf.Bytes()
}

func TestPackFilesOfEverythingIsPack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tree := map[string]string{}
	for k, v := range sampleTree {
		if !strings.Contains(k, ".git") {
			tree[k] = v
		}
	}
	writeTree(t, dir, tree, sortedKeys(tree))
	var names []string
	for _, k := range sortedKeys(tree) {
		names = append(names, strings.TrimSuffix(k, "/"))
	}
	_, whole, _ := packBytes(t, dir)
	got, _ := packFiles(t, dir, names)
	if got != whole {
		t.Errorf("PackFiles of every entry = %s, Pack = %s: a selection of everything must be the same artifact", got, whole)
	}
}

func TestPackFilesSelection(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, sampleTree, sortedKeys(sampleTree))
	// b holds only the selected files, in another order and with other modes.
	sel := map[string]string{"apps/web/deploy.yaml": sampleTree["apps/web/deploy.yaml"], "links/web": "->../apps/web", "unrelated.yaml": "x"}
	writeTree(t, b, sel, []string{"unrelated.yaml", "links/web", "apps/web/deploy.yaml"})
	names := []string{"links/web", "apps/web/deploy.yaml", "links/web"} // duplicates are harmless
	da, data := packFiles(t, a, names)
	db, _ := packFiles(t, b, names)
	if da != db {
		t.Errorf("the same selection of the same files gave %s and %s", da, db)
	}
	out := t.TempDir()
	if err := Unpack(context.Background(), bytes.NewReader(data), out, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"apps":                 "dir 755",
		"apps/web":             "dir 755",
		"apps/web/deploy.yaml": "file 644 kind: Deployment\n",
		"links":                "dir 755",
		"links/web":            "symlink -> ../apps/web",
	}
	if diff := cmp.Diff(want, snapshot(t, out)); diff != "" {
		t.Errorf("unpacked selection (-want +got):\n%s", diff)
	}
}

func TestPackFilesRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, sampleTree, sortedKeys(sampleTree))
	for _, tc := range []struct{ name, want string }{
		{"../x", "'..' component"},
		{"/etc/passwd", "not a relative slash-separated path"},
		{"apps/./web", "'.' or '..' component"},
		{".git/config", ".git is never packed"},
		{"links/web/deploy.yaml", "is not a directory"}, // below a symlink
		{"missing.yaml", "no such file"},
		{`apps\web`, "not a relative slash-separated path"},
	} {
		_, _, err := PackFiles(context.Background(), dir, []string{tc.name}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PackFiles(%q) = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestStorePutFiles(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	dir := t.TempDir()
	writeTree(t, dir, sampleTree, sortedKeys(sampleTree))
	d1, _, err := s.PutFiles(context.Background(), dir, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := packFiles(t, dir, []string{"README.md"})
	if d1 != d2 || !s.Has(d1) {
		t.Errorf("PutFiles = %s (stored %t), PackFiles = %s", d1, s.Has(d1), d2)
	}
	assertNoTemp(t, s)
}
