// Package sopstest runs the reference sops CLI (bin/sops, built from tools/sops by `make
// bin/sops`) in tests. A test that needs it fails, never skips, without it.
package sopstest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binary returns bin/sops at the repository root.
func Binary(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/flotilla/flotilla\n")) {
			p := filepath.Join(d, "bin", "sops")
			if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
				t.Fatalf("%s is missing: run `make bin/sops` at the repository root (builds the reference sops from tools/sops)", p)
			}
			return p
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no repository root (go.mod of github.com/flotilla/flotilla) above %s", wd)
		}
	}
}

// Run runs bin/sops with args, in a clean environment (a HOME of its own, so no user
// configuration or key file is read) plus env, and returns its standard output; it fails the
// test with sops's standard error when sops fails.
func Run(t testing.TB, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("sops %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}
