package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"
)

// DirRevision must change exactly when what LoadDir could read changes: hidden files and
// directories are skipped by both.
func TestDirRevision(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rev := func() string {
		t.Helper()
		r, err := DirRevision(dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write("fleet.yaml", "a: 1\n")
	base := rev()
	steps := []struct {
		name, file, content string
		changes             bool
	}{
		{"a hidden file", ".notes.yaml", "x", false},
		{"a file in a hidden directory", ".git/config", "x", false},
		{"the same content again", "fleet.yaml", "a: 1\n", false},
		{"a changed file", "fleet.yaml", "a: 2\n", true},
		{"a new file in a subdirectory", "teams/a.yaml", "b: 1\n", true},
	}
	for _, s := range steps {
		write(s.file, s.content)
		got := rev()
		if changed := got != base; changed != s.changes {
			t.Errorf("%s: revision changed = %v, want %v", s.name, changed, s.changes)
		}
		base = got
	}
	if _, err := DirRevision(filepath.Join(dir, "missing")); err == nil {
		t.Error("DirRevision of a missing directory: no error")
	}
}
