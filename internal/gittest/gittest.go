// Package gittest makes real Git repositories for tests: the sources and fleet repositories
// a hub reads, committed with go-git as a user's commit would be.
package gittest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitFiles makes dir a Git repository whose branch main has one commit of files (slash
// paths relative to dir).
func CommitFiles(tb testing.TB, dir string, files map[string][]byte) {
	tb.Helper()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"}})
	if err != nil {
		tb.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		tb.Fatal(err)
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := wt.Commit("initial", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}}); err != nil {
		tb.Fatal(err)
	}
}
