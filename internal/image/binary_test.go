package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tinyModule is a Git checkout of a one-line Go program, committed at a fixed time, so that
// `go build -buildvcs=true` stamps it like make image stamps flotilla (this machine's go env
// turns stamping off by default).
func tinyModule(t *testing.T) (dir, commit string, when time.Time) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"go.mod":  "module tiny\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"tiny\") }\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	when = time.Date(2026, 10, 1, 9, 30, 0, 0, time.UTC)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
			"GIT_AUTHOR_DATE="+when.Format(time.RFC3339), "GIT_COMMITTER_DATE="+when.Format(time.RFC3339))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "tiny")
	return dir, git("rev-parse", "HEAD"), when
}

func goBuild(t *testing.T, dir, out string, cgo string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), out)
	cmd := exec.Command("go", append(append([]string{"build", "-o", path}, args...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOFLAGS=", "GOOS=linux", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, b)
	}
	return path
}

func TestInspect(t *testing.T) {
	t.Parallel()
	dir, commit, when := tinyModule(t)
	static := goBuild(t, dir, "static", "0", "-trimpath", "-buildvcs=true")
	b, err := Inspect(static)
	if err != nil {
		t.Fatalf("Inspect of a static, stamped Go binary: %v", err)
	}
	if b.Revision != commit || !b.Time.Equal(when) || b.Modified || b.Arch == "" {
		t.Errorf("Inspect: revision %s time %s modified %v arch %q; want %s, %s, false, set", b.Revision, b.Time, b.Modified, b.Arch, commit, when)
	}

	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dynamic, err := exec.LookPath("ls") // a C program: ELF with a program interpreter
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nothing"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"not ELF", notELF, "not a Linux executable"},
		{"dynamically linked", dynamic, "dynamically linked"},
		{"no VCS stamp", goBuild(t, dir, "novcs", "0", "-buildvcs=false"), "no VCS revision stamped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Inspect(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Inspect(%s): %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
}
