package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/bytesize"
)

// zeroBlobCommit commits, on top of HEAD, a file name holding size zero bytes without
// writing it to the working tree: git hash-object reads the zeros from a pipe, so the test
// costs a few hundred KiB of disk whatever size is.
func (r *testRepo) zeroBlobCommit(name string, size int64) string {
	r.t.Helper()
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir = r.dir
	cmd.Env = gitEnv()
	cmd.Stdin = io.LimitReader(zeros{}, size)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git hash-object: %v", err)
	}
	blob := strings.TrimSpace(string(out))
	r.git("update-index", "--add", "--cacheinfo", "100644,"+blob+","+name)
	r.ticks++
	r.git("commit", "-q", "-m", "add "+name)
	return r.git("rev-parse", "HEAD")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// duBytes is the space the files under root take on disk (allocated blocks, so a sparse
// file counts for what it really uses).
func duBytes(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += diskUsage(fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An attack on the hub's disk: a tenant commits a huge file of zeros (a few hundred KiB in
// Git), or too many files. The checkout is refused with the source, revision and bound
// named, and nothing large is written: the size is read from the object header first.
func TestCheckoutRefusesATreeOverItsBounds(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprintf("file%02d.yaml", i)] = "kind: ConfigMap\n"
	}
	for _, tt := range []struct {
		name   string
		limits artifact.Limits
		commit func(r *testRepo) string
		want   string // with %s for the abbreviated commit
	}{{
		name:   "a 40 MiB file over a 1 MiB file bound",
		limits: artifact.Limits{MaxFileBytes: 1 << 20},
		commit: func(r *testRepo) string {
			r.commit("first", map[string]string{"apps/web.yaml": "kind: Deployment\n"})
			return r.zeroBlobCommit("big.bin", 40<<20)
		},
		want: "source 'team-a-apps' at %s: file 'big.bin' is 40 MiB, over the 1 MiB file bound",
	}, {
		name:   "a nested 3 MiB file over a 2 MiB total bound",
		limits: artifact.Limits{MaxBytes: 2 << 20},
		commit: func(r *testRepo) string {
			r.commit("first", map[string]string{"apps/a.yaml": strings.Repeat("a", 1<<20)})
			return r.zeroBlobCommit("apps/b.bin", 3<<20)
		},
		want: "source 'team-a-apps' at %s: files add up to 4 MiB with 'apps/b.bin', over the 2 MiB total bound",
	}, {
		name:   "20 files over a 10 entries bound",
		limits: artifact.Limits{MaxFiles: 10},
		commit: func(r *testRepo) string { return r.commit("many", many) },
		want:   "source 'team-a-apps' at %s: more than 10 entries (files, directories, symlinks) at 'file10.yaml', over the 10 entries bound",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t)
			commit := tt.commit(r)
			cache := t.TempDir()
			p := NewPollerWithOptions(cache, Options{Limits: tt.limits})
			// What the checkout begins to write: never the file over a bound, whose size
			// comes from its Git header (a 20 GiB zero file is a few MiB in a pack).
			var created []string
			p.createFile = func(path string, mode fs.FileMode) (io.WriteCloser, error) {
				created = append(created, filepath.Base(path))
				return createFile(path, mode)
			}
			g := Git{Name: "team-a-apps", URL: r.dir}
			resolve(t, p, g)

			dst := filepath.Join(t.TempDir(), "tree")
			err := p.Checkout(context.Background(), g, commit, dst)
			want := fmt.Sprintf(tt.want, commit[:7])
			if err == nil || err.Error() != want {
				t.Fatalf("Checkout: got error %v\nwant %s", err, want)
			}
			var be *BoundError
			if !errors.As(err, &be) {
				t.Errorf("Checkout: error %T is not a *BoundError", err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Checkout left %s behind (stat: %v)", dst, err)
			}
			for _, name := range created {
				if name == "big.bin" || name == "b.bin" || name == "file10.yaml" {
					t.Errorf("the checkout began to write %s, the file over the bound (written: %v)", name, created)
				}
			}
			// The mirror holds the compressed objects only: a few MiB at most.
			if n := duBytes(t, cache); n > 8<<20 {
				t.Errorf("the mirror takes %s on disk", bytesize.Format(n))
			}
		})
	}
}

func TestCheckoutWithinItsBoundsWritesTheTree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	commit := r.commit("small", map[string]string{"a.yaml": "kind: A\n", "dir/b.yaml": "kind: B\n"})
	// Exactly at the bounds: 3 entries (a.yaml, dir, dir/b.yaml), 16 bytes, 8 bytes a file.
	p := NewPollerWithOptions(t.TempDir(), Options{Limits: artifact.Limits{MaxFiles: 3, MaxBytes: 16, MaxFileBytes: 8}})
	g := Git{Name: "platform", URL: r.dir}
	resolve(t, p, g)
	dst := filepath.Join(t.TempDir(), "tree")
	if err := p.Checkout(context.Background(), g, commit, dst); err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "dir", "b.yaml")); err != nil || string(b) != "kind: B\n" {
		t.Errorf("dir/b.yaml: %q, %v", b, err)
	}
}
