package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var sampleTree = map[string]string{
	"README.md":                 "hello\n",
	"apps/web/deploy.yaml":      "kind: Deployment\n",
	"apps/web/service.yaml":     "kind: Service\n",
	"apps/web.yaml":             "kind: Kustomization\n",
	"bin/run.sh":                "#!/bin/sh\necho run\n",
	"empty/":                    "",
	"links/readme":              "->../README.md",
	"links/web":                 "->../apps/web",
	".git/config":               "[core]\n",
	"apps/.git":                 "gitdir: elsewhere\n",
	"deep/a/b/c/d/e/f/g/h.yaml": strings.Repeat("x", 300),
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func packBytes(t *testing.T, dir string) ([]byte, string, int64) {
	t.Helper()
	var buf bytes.Buffer
	digest, size, err := Pack(context.Background(), dir, &buf)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return buf.Bytes(), digest, size
}

func TestPackIsDeterministic(t *testing.T) {
	t.Parallel()
	// The same tree, created in opposite orders, with other permissions
	// than the fixed ones and different file times.
	a, b := t.TempDir(), t.TempDir()
	order := sortedKeys(sampleTree)
	writeTree(t, a, sampleTree, order)
	slices.Reverse(order)
	writeTree(t, b, sampleTree, order)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := filepath.Walk(b, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(b, "README.md"), 0o664); err != nil {
		t.Fatal(err)
	}

	rawA, digestA, sizeA := packBytes(t, a)
	rawB, digestB, _ := packBytes(t, b)
	_, digestA2, _ := packBytes(t, a)

	if digestA != digestB || digestA != digestA2 {
		t.Fatalf("digests differ: %s, %s, %s", digestA, digestB, digestA2)
	}
	if !bytes.Equal(rawA, rawB) {
		t.Fatal("same digest but different bytes")
	}
	sum := sha256.Sum256(rawA)
	if want := "sha256:" + hex.EncodeToString(sum[:]); digestA != want {
		t.Errorf("digest = %s, want sha256 of the bytes %s", digestA, want)
	}
	if sizeA != int64(len(rawA)) {
		t.Errorf("size = %d, want %d", sizeA, len(rawA))
	}

	// A change of content or of the executable bit changes the digest.
	if err := os.WriteFile(filepath.Join(b, "README.md"), []byte("hello!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, d, _ := packBytes(t, b); d == digestA {
		t.Error("digest unchanged after a content change")
	}
	if err := os.WriteFile(filepath.Join(b, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(b, "README.md"), 0o744); err != nil {
		t.Fatal(err)
	}
	if _, d, _ := packBytes(t, b); d == digestA {
		t.Error("digest unchanged after chmod +x")
	}
}

func TestPackFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, sampleTree, sortedKeys(sampleTree))
	raw, _, _ := packBytes(t, dir)

	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() || gz.Comment != "" || gz.Extra != nil {
		t.Errorf("gzip header not fixed: %+v", gz.Header)
	}
	tr := tar.NewReader(gz)
	type entry struct {
		Name     string
		Type     byte
		Mode     int64
		Linkname string
	}
	var got []entry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: header not normalized: mtime %v uid %d gid %d uname %q gname %q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Linkname})
	}
	want := []entry{
		{"README.md", tar.TypeReg, 0o644, ""},
		{"apps/", tar.TypeDir, 0o755, ""},
		{"apps/web.yaml", tar.TypeReg, 0o644, ""},
		{"apps/web/", tar.TypeDir, 0o755, ""},
		{"apps/web/deploy.yaml", tar.TypeReg, 0o644, ""},
		{"apps/web/service.yaml", tar.TypeReg, 0o644, ""},
		{"bin/", tar.TypeDir, 0o755, ""},
		{"bin/run.sh", tar.TypeReg, 0o755, ""},
		{"deep/", tar.TypeDir, 0o755, ""},
		{"deep/a/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/d/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/d/e/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/d/e/f/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/d/e/f/g/", tar.TypeDir, 0o755, ""},
		{"deep/a/b/c/d/e/f/g/h.yaml", tar.TypeReg, 0o644, ""},
		{"empty/", tar.TypeDir, 0o755, ""},
		{"links/", tar.TypeDir, 0o755, ""},
		{"links/readme", tar.TypeSymlink, 0o777, "../README.md"},
		{"links/web", tar.TypeSymlink, 0o777, "../apps/web"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestPackRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		{
			name: "absolute symlink",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "symlink 'passwd' -> '/etc/passwd': absolute target",
		},
		{
			name: "symlink climbing out",
			setup: func(t *testing.T, dir string) {
				if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("../../secret", filepath.Join(dir, "a", "up")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "symlink 'a/up' -> '../../secret': points outside the tree",
		},
		{
			name: "symlink with .. after a component",
			setup: func(t *testing.T, dir string) {
				if err := os.Symlink("x/../y", filepath.Join(dir, "l")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "symlink 'l' -> 'x/../y': '..' after a path component",
		},
		{
			name: "fifo",
			setup: func(t *testing.T, dir string) {
				if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			},
			wantErr: "'pipe': unsupported file type",
		},
		{
			name: "backslash in a name",
			setup: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, `a\b`), nil, 0o644); err != nil { //nolint:gocritic // a file whose name holds a backslash, on purpose: not a path
					t.Fatal(err)
				}
			},
			wantErr: `'a\b': backslash in file name`,
		},
		{
			name:    "missing directory",
			setup:   func(t *testing.T, dir string) { os.RemoveAll(dir) },
			wantErr: "no such file or directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "tree")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("ok"), 0o644); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			var buf bytes.Buffer
			_, _, err := Pack(context.Background(), dir, &buf)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Pack error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "pack "+dir) {
				t.Errorf("error %q does not start with the directory", err)
			}
			if buf.Len() != 0 {
				t.Errorf("Pack wrote %d bytes for a refused tree", buf.Len())
			}
		})
	}
}

func TestPackHonoursContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, sampleTree, sortedKeys(sampleTree))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Pack(ctx, dir, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pack with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestCheckSymlink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, target string
		ok           bool
	}{
		{"l", "a", true},
		{"l", "a/b/c", true},
		{"l", "./a", true},
		{"l", ".", true},
		{"d/l", "..", true},
		{"d/l", "../x", true},
		{"d/e/l", "../../x/y", true},
		{"d/e/l", ".././../x", true},
		{"l", "..", false},
		{"l", "../x", false},
		{"d/l", "../../x", false},
		{"l", "/etc", false},
		{"l", "", false},
		{"l", "a/../b", false},
		{"d/l", "x/../../..", false},
		{"l", "a\\..\\..\\b", false},
	}
	for _, tt := range tests {
		err := CheckSymlink(tt.name, tt.target)
		if (err == nil) != tt.ok {
			t.Errorf("CheckSymlink(%q, %q) = %v, want ok=%v", tt.name, tt.target, err, tt.ok)
		}
	}
}
