// Package toolbin finds the reference CLIs the tests compare with or interoperate with (helm,
// cosign, sops), which `make bin/NAME` builds into bin/ from their pinned modules in tools/.
package toolbin

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Path returns bin/name at the repository root (the directory whose go.mod is flotilla's,
// found from the working directory up). A test that needs the tool fails without it, saying
// how to build it: it never skips.
func Path(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(t), "bin", name)
	if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s is missing: run `make bin/%s` at the repository root (it builds the reference %s from tools/%s)", p, name, name, name)
	}
	return p
}

// Root returns the repository root: the directory whose go.mod is flotilla's, found from the
// working directory up.
func Root(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/flotilla/flotilla\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no repository root (go.mod of github.com/flotilla/flotilla) above %s", wd)
		}
	}
}
