package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrBinaryNotFound is returned (wrapped) by [Start] when kube-apiserver or etcd is missing.
var ErrBinaryNotFound = errors.New("binary not found")

// BuildTarget is the make target, run at the repository root, that builds the binaries.
const BuildTarget = "make kube-binaries"

// BinDirEnv names the environment variable that points at a directory holding kube-apiserver and
// etcd, for a flotilla binary run outside the repository.
const BinDirEnv = "FLOTILLA_BIN_DIR"

// binaries are the paths of the two control-plane programs, and of kubectl if it was built
// (it is optional: only tests and users need it).
type binaries struct {
	apiserver, etcd, kubectl string
}

// findBinaries locates kube-apiserver and etcd. With binDir set it looks only there; otherwise in
// $FLOTILLA_BIN_DIR, then bin/ in the working directory and each of its parents (so tests in any
// package find the repository's bin/), then beside the running executable.
func findBinaries(binDir string) (binaries, error) {
	dirs := []string{binDir}
	if binDir == "" {
		dirs = candidateDirs()
	}
	var b binaries
	for _, want := range []struct {
		name string
		dst  *string
	}{{"kube-apiserver", &b.apiserver}, {"etcd", &b.etcd}} {
		path, err := lookIn(dirs, want.name)
		if err != nil {
			return b, err
		}
		*want.dst = path
	}
	b.kubectl, _ = lookIn(dirs, "kubectl")
	return b, nil
}

func candidateDirs() []string {
	var dirs []string
	if d := os.Getenv(BinDirEnv); d != "" {
		dirs = append(dirs, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, filepath.Join(d, "bin"))
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	return dirs
}

func lookIn(dirs []string, name string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s %w (looked in %s): run %q at the repository root to build it, or set %s to the directory that holds it",
		name, ErrBinaryNotFound, strings.Join(dirs, ", "), BuildTarget, BinDirEnv)
}
