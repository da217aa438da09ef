// Package sopstest runs the reference sops CLI (bin/sops, built from tools/sops by `make
// bin/sops`) in tests. A test that needs it fails, never skips, without it.
package sopstest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/flotilla/flotilla/internal/toolbin"
)

// Binary returns bin/sops at the repository root.
func Binary(t testing.TB) string {
	t.Helper()
	return toolbin.Path(t, "sops")
}

// Run runs bin/sops with args, in a clean environment (a HOME of its own, so no user
// configuration or key file is read) plus env, and returns its standard output; it fails the
// test with sops's standard error when sops fails.
func Run(t testing.TB, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), Binary(t), args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("sops %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}
