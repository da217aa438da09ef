package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPackUnpackRoundTrip(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeTree(t, src, sampleTree, sortedKeys(sampleTree))
	raw, _, _ := packBytes(t, src)

	dst := filepath.Join(t.TempDir(), "out")
	if err := Unpack(context.Background(), bytes.NewReader(raw), dst, DefaultLimits()); err != nil {
		t.Fatalf("Unpack: %v", err)
	}

	// What Pack promises: the same tree without .git, with normalized modes.
	want := map[string]string{}
	for k, v := range snapshot(t, src) {
		if k == ".git" || strings.HasPrefix(k, ".git/") || k == "apps/.git" {
			continue
		}
		switch {
		case strings.HasPrefix(v, "dir "):
			v = "dir 755"
		case strings.HasPrefix(v, "file 700 "):
			v = "file 755 " + strings.TrimPrefix(v, "file 700 ")
		case strings.HasPrefix(v, "file 600 "):
			v = "file 644 " + strings.TrimPrefix(v, "file 600 ")
		}
		want[k] = v
	}
	if diff := cmp.Diff(want, snapshot(t, dst)); diff != "" {
		t.Errorf("unpacked tree (-want +got):\n%s", diff)
	}

	// Packing the unpacked tree gives the same artifact back.
	if raw2, _, _ := packBytes(t, dst); !bytes.Equal(raw, raw2) {
		t.Error("Pack(Unpack(a)) != a")
	}
}

func TestUnpackIntoExistingEmptyDir(t *testing.T) {
	t.Parallel()
	raw := buildTarGz(t, reg("a", "1"))
	dst := t.TempDir()
	if err := Unpack(context.Background(), bytes.NewReader(raw), dst, Limits{}); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"a": "file 644 1"}, snapshot(t, dst)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := Unpack(context.Background(), bytes.NewReader(raw), dst, Limits{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Unpack into a non-empty dir = %v, want 'not empty'", err)
	}
}

func TestUnpackRefuses(t *testing.T) {
	t.Parallel()
	small := Limits{MaxFiles: 3, MaxBytes: 10, MaxFileBytes: 6}
	tests := []struct {
		name    string
		entries []tarEntry
		lim     Limits
		wantErr string
	}{
		{"absolute path", []tarEntry{reg("ok", "1"), reg("/etc/cron.d/x", "evil")}, small, "entry '/etc/cron.d/x': absolute path"},
		{"dot-dot", []tarEntry{reg("../x", "evil")}, small, "entry '../x': '..' in path"},
		{"dot-dot inside", []tarEntry{reg("a/../../x", "evil")}, small, "entry 'a/../../x': '..' in path"},
		{"dot-dot directory", []tarEntry{dirEnt("a/../../")}, small, "entry 'a/../../': '..' in path"},
		{"backslash", []tarEntry{reg("..\\x", "evil")}, small, "entry '..\\x': backslash"},
		{"absolute symlink", []tarEntry{symlink("l", "/etc")}, small, "entry 'l': symlink 'l' -> '/etc': absolute target"},
		{"escaping symlink", []tarEntry{symlink("a/l", "../../etc")}, small, "entry 'a/l': symlink 'a/l' -> '../../etc': points outside the tree"},
		{
			// d/l resolves to the root; e's text "d/l/.." looks like "d" but
			// really is the root's parent.
			"symlink chain through ..",
			[]tarEntry{dirEnt("d/"), symlink("d/l", ".."), symlink("e", "d/l/..")},
			Limits{}, "entry 'e': symlink 'e' -> 'd/l/..': '..' after a path component",
		},
		{
			"write through a symlink",
			[]tarEntry{dirEnt("sub/"), symlink("l", "sub"), reg("l/x", "1")},
			Limits{}, "entry 'l/x': parent 'l' is not a directory",
		},
		{
			"replace a file with a symlink",
			[]tarEntry{reg("a", "1"), symlink("a", "b")},
			Limits{}, "file exists",
		},
		{"duplicate file", []tarEntry{reg("a", "1"), reg("a", "2")}, small, "file exists"},
		{"hard link", []tarEntry{reg("a", "1"), typed("h", tar.TypeLink)}, small, "entry 'h': hard links are not allowed"},
		{"char device", []tarEntry{typed("dev", tar.TypeChar)}, small, "entry 'dev': device and fifo entries are not allowed"},
		{"block device", []tarEntry{typed("dev", tar.TypeBlock)}, small, "entry 'dev': device and fifo entries are not allowed"},
		{"fifo", []tarEntry{typed("p", tar.TypeFifo)}, small, "entry 'p': device and fifo entries are not allowed"},
		{"too many entries", []tarEntry{reg("a", "1"), reg("b", "1"), dirEnt("c/"), reg("d", "1")}, small, "entry 'd': over the limit of 3 files"},
		{"file too big", []tarEntry{reg("big", "1234567")}, small, "entry 'big': over the limit of 6 file bytes"},
		{"total too big", []tarEntry{reg("a", "123456"), reg("b", "12345")}, small, "entry 'b': over the limit of 10 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			dst := filepath.Join(base, "out")
			raw := buildTarGz(t, tt.entries...)
			err := Unpack(context.Background(), bytes.NewReader(raw), dst, tt.lim)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Unpack error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "unpack into "+dst+": ") {
				t.Errorf("error %q does not start with the destination", err)
			}
			if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dst left behind after error (stat: %v)", err)
			}
			if names, _ := readDirNames(base); len(names) != 0 {
				t.Errorf("files outside dst: %v", names)
			}
		})
	}
}

func TestUnpackErrorEmptiesExistingDst(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	raw := buildTarGz(t, reg("a/b", "1"), reg("c", "2"), reg("../x", "3"))
	if err := Unpack(context.Background(), bytes.NewReader(raw), dst, Limits{}); err == nil {
		t.Fatal("Unpack accepted '../x'")
	}
	if names, err := readDirNames(dst); err != nil || len(names) != 0 {
		t.Errorf("dst after error: %v, %v; want it empty", names, err)
	}
}

func TestUnpackNotGzip(t *testing.T) {
	t.Parallel()
	dst := filepath.Join(t.TempDir(), "out")
	err := Unpack(context.Background(), strings.NewReader("not a tarball"), dst, Limits{})
	if err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("Unpack(garbage) = %v, want a gzip error", err)
	}
}

// bomb streams a gzip-compressed tar of zero-filled files, n files of size
// bytes each, without holding it in memory. It returns the reader and a
// counter of the uncompressed bytes produced so far.
func bomb(t *testing.T, n int, size int64) (io.Reader, *atomic.Int64) {
	return bombOf(t, tar.TypeReg, n, size)
}

// rawHeader builds a tar header block by hand: archive/tar's writer refuses
// data for anything but regular files, and a bomb wants exactly that.
func rawHeader(name string, typeflag byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b, name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], "00000000000\x00")
	b[156] = typeflag
	copy(b[257:], "ustar\x0000")
	copy(b[148:], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func bombOf(t *testing.T, typeflag byte, n int, size int64) (io.Reader, *atomic.Int64) {
	t.Helper()
	pr, pw := io.Pipe()
	var produced atomic.Int64
	go func() {
		gz, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		zeros := make([]byte, 1<<20)
		err := func() error {
			for i := range n {
				name := fmt.Sprintf("zeros-%d", i)
				if _, err := gz.Write(rawHeader(name, typeflag, size)); err != nil {
					return err
				}
				// size is a multiple of 512 in these tests: no padding.
				for left := size; left > 0; {
					k := min(left, int64(len(zeros)))
					if _, err := gz.Write(zeros[:k]); err != nil {
						return err
					}
					left -= k
					produced.Add(k)
				}
			}
			if _, err := gz.Write(make([]byte, 1024)); err != nil {
				return err
			}
			return gz.Close()
		}()
		pw.CloseWithError(err)
	}()
	t.Cleanup(func() { pr.CloseWithError(errors.New("test done")) })
	return pr, &produced
}

func TestUnpackStopsGzipBomb(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxFiles: 100, MaxFileBytes: 1 << 20, MaxBytes: 4 << 20}
	tests := []struct {
		name     string
		typeflag byte
		files    int
		size     int64
		wantErr  string
	}{
		// The header announces 1 GiB: refused before anything is written.
		{"one huge file", tar.TypeReg, 1, 1 << 30, "entry 'zeros-0': over the limit of 1048576 file bytes"},
		// Each file is within limits; the running total is not.
		{"many files", tar.TypeReg, 1024, 1 << 20, "entry 'zeros-4': over the limit of 4194304 bytes"},
		// archive/tar reads extension headers (here GNU long names of 1 MiB
		// each) itself, without returning an entry: they never reach the
		// file or entry counts, yet must not decompress without end.
		{"chained extension headers", tar.TypeGNULongName, 1024, 1 << 20, "archive: over the limit of 5029888 uncompressed archive bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, produced := bombOf(t, tt.typeflag, tt.files, tt.size)
			dst := filepath.Join(t.TempDir(), "out")
			start := time.Now()
			err := Unpack(context.Background(), r, dst, lim)
			elapsed := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Unpack = %v, want it to contain %q", err, tt.wantErr)
			}
			var le *LimitError
			if !errors.As(err, &le) {
				t.Errorf("error %v is not a *LimitError", err)
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %v to refuse the bomb", elapsed)
			}
			total := int64(tt.files) * tt.size
			if p := produced.Load(); p > total/8 {
				t.Errorf("read %d of %d bytes before refusing; want an early stop", p, total)
			}
			if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dst left behind (stat: %v)", err)
			}
		})
	}
}

func TestUnpackHonoursContext(t *testing.T) {
	t.Parallel()
	r, _ := bomb(t, 1, 1<<30)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	dst := filepath.Join(t.TempDir(), "out")
	lim := Limits{MaxFileBytes: 2 << 30, MaxBytes: 2 << 30}
	if err := Unpack(ctx, r, dst, lim); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Unpack = %v, want context.DeadlineExceeded", err)
	}
}
