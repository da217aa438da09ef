// Package testbin finds the flotilla binaries that make builds for the tests that run them as
// processes (the fault and HA end-to-end tests, the simulator, the image test). Tests never
// build the main module themselves: `make test-bins` builds each binary once per run, with the
// race detector, and `make test` hands the directory to every test through FLOTILLA_BIN.
package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// Env names the directory holding the binaries under test.
const Env = "FLOTILLA_BIN"

// Path returns $FLOTILLA_BIN/name. Without FLOTILLA_BIN, or without that binary in it, the test
// fails saying how to build it: it never skips, and it never runs a stale binary it found by
// itself.
func Path(t testing.TB, name string) string {
	t.Helper()
	return PathFrom(t, Env, name, "make test-e2e")
}

// PathFrom returns $env/name, or fails the test naming the make target that runs it with env set.
func PathFrom(t testing.TB, env, name, target string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Fatalf("%s is not set: this test runs the %s binary that make builds for it; run it through make (%s)", env, name, target)
	}
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s holds no executable %s: run it through make (%s), which builds it", env, dir, name, target)
	}
	return p
}
