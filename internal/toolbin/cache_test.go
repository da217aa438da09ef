package toolbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolCacheBuildsOncePerPin runs tools/build-cli.sh as make does, on a tool of its own: the
// first clone builds it into the cache, a second clone (another bin/) links the same build
// without building, and a changed pin builds a new entry beside the old one.
func TestToolCacheBuildsOncePerPin(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tools := filepath.Join(root, "tools")
	for _, f := range []string{"cache.sh", "build-cli.sh"} {
		data, err := os.ReadFile(filepath.Join(Root(t), "tools", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(tools, f), string(data), 0o755)
	}
	hello := filepath.Join(tools, "hello")
	write(t, filepath.Join(hello, "go.mod"), "module example.com/hello\n\ngo 1.22\n", 0o644)
	write(t, filepath.Join(hello, "go.sum"), "", 0o644)
	write(t, filepath.Join(hello, "main.go"), "package main\n\nfunc main() { println(\"hello\") }\n", 0o644)
	write(t, filepath.Join(hello, "build.sh"), "#!/usr/bin/env bash\nexec \"$(dirname \"${BASH_SOURCE[0]}\")/../build-cli.sh\" hello example.com/hello\n", 0o755)
	cache := filepath.Join(root, "cache")

	run := func(bin string) string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(hello, "build.sh"))
		cmd.Env = append(os.Environ(), "BIN="+bin, "FLOTILLA_TOOLS_CACHE="+cache, "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
		target, err := os.Readlink(filepath.Join(bin, "hello"))
		if err != nil {
			t.Fatalf("bin/hello is not a link into the cache: %v", err)
		}
		if !strings.HasPrefix(target, cache+string(filepath.Separator)) {
			t.Fatalf("bin/hello links to %s, outside the cache %s", target, cache)
		}
		if got, err := exec.Command(filepath.Join(bin, "hello")).CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "hello" {
			t.Fatalf("bin/hello ran with %v: %q", err, got)
		}
		return string(out)
	}

	first := run(filepath.Join(root, "clone1", "bin"))
	if !strings.Contains(first, "building hello") {
		t.Fatalf("the first clone did not build hello:\n%s", first)
	}
	if second := run(filepath.Join(root, "clone2", "bin")); strings.Contains(second, "building") {
		t.Fatalf("a second clone built hello again instead of linking the cached build:\n%s", second)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "hello-*"))
	if len(entries) != 1 {
		t.Fatalf("cache entries after two clones of one pin: %v, want one", entries)
	}

	write(t, filepath.Join(hello, "go.mod"), "module example.com/hello\n\ngo 1.23\n", 0o644)
	if third := run(filepath.Join(root, "clone1", "bin")); !strings.Contains(third, "building hello") {
		t.Fatalf("a changed pin did not build again:\n%s", third)
	}
	if entries, _ := filepath.Glob(filepath.Join(cache, "hello-*")); len(entries) != 2 {
		t.Fatalf("cache entries after a pin change: %v, want the old and the new", entries)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
