package artifact

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Packing is bounded as agents' unpacking is: a sparse 65 MiB file (no disk to make) and
// 10,001 entries are refused before anything is written, naming the file and the bound.
func TestPackRefusesATreeOverTheUnpackBounds(t *testing.T) {
	t.Parallel()
	lim := DefaultLimits()
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // with %s for the directory
	}{{
		name: "a file over the file bound",
		setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "apps"), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, "apps", "big.bin"))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(lim.MaxFileBytes + 1); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		},
		want: "pack %s: file 'apps/big.bin' is 67108865 bytes, over the 67108864 bytes file bound",
	}, {
		name: "files over the total bound",
		setup: func(t *testing.T, dir string) {
			for i := range 5 {
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%d.bin", i)))
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Truncate(lim.MaxFileBytes); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
		},
		want: "pack %s: files add up to 335544320 bytes with 'f4.bin', over the 268435456 bytes total bound",
	}, {
		name: "too many entries",
		setup: func(t *testing.T, dir string) {
			for i := range lim.MaxFiles + 1 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
		want: "pack %s: 10001 entries, over the 10000 entries bound",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.setup(t, dir)
			n := &countingWriter{w: io.Discard}
			_, _, err := Pack(context.Background(), dir, n)
			want := fmt.Sprintf(tt.want, dir)
			if err == nil || err.Error() != want {
				t.Fatalf("Pack: got error %v\nwant %s", err, want)
			}
			if n.n > 64 {
				t.Errorf("Pack wrote %d bytes before refusing", n.n)
			}
		})
	}
}
