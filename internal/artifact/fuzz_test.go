package artifact

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/fuzzseed"
)

// fuzzSeeds are the committed seed corpus, by file name.
func fuzzSeeds(t testing.TB) map[string][]byte {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"a.yaml":     "kind: ConfigMap\n",
		"dir/b.yaml": "kind: Secret\n",
		"dir/run.sh": "#!/bin/sh\n",
		"dir/link":   "->../a.yaml",
	}, []string{"a.yaml", "dir/b.yaml", "dir/run.sh", "dir/link"})
	var valid bytes.Buffer
	if _, _, err := Pack(context.Background(), src, &valid); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"valid":    valid.Bytes(),
		"dotdot":   buildTarGz(t, dirEnt("a/"), reg("a/../../escape", "evil")),
		"absolute": buildTarGz(t, reg("/tmp/flotilla-fuzz-escape", "evil")),
		"symlink":  buildTarGz(t, dirEnt("d/"), symlink("d/l", ".."), symlink("e", "d/l/.."), reg("e/x", "evil")),
	}
}

// TestFuzzSeedCorpus checks that the committed seed corpus is what fuzzSeeds builds
// (-write-fuzz-seeds rewrites it).
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	fuzzseed.Check(t, "FuzzUnpack", fuzzSeeds(t))
}

// FuzzUnpack checks that no input makes Unpack panic, write outside its
// destination, leave a symlink that could lead outside, or leave anything
// behind when it fails.
//
// Input without the gzip magic number is compressed before it is unpacked:
// mutating compressed bytes mostly exercises gzip's checksum, so the raw tar
// seeds added here are what lets the fuzzer explore tar headers.
func FuzzUnpack(f *testing.F) {
	f.Add(buildTar(f, reg("a", "1"), dirEnt("d/"), reg("d/b", "2"), symlink("d/l", "../a")))
	f.Add(buildTar(f, reg("../x", "evil")))
	f.Add(buildTar(f, reg("/x", "evil")))
	f.Add(buildTar(f, dirEnt("d/"), symlink("d/l", ".."), symlink("e", "d/l/.."), reg("l/x", "evil")))
	// Each input unpacks into a fresh directory. A tmpfs, where there is one,
	// keeps that cheap: on a disk mounted with discard, removing directories
	// dominates the run and the fuzzer barely gets past minimizing its first
	// finds within a short -fuzztime.
	root := f.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "flotilla-fuzz-"); err == nil {
		root = d
		f.Cleanup(func() { os.RemoveAll(d) })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			data = storedGzip(data)
		}
		base, err := os.MkdirTemp(root, "")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		dst := filepath.Join(base, "out")
		lim := Limits{MaxFiles: 64, MaxBytes: 1 << 20, MaxFileBytes: 256 << 10}
		err = Unpack(context.Background(), bytes.NewReader(data), dst, lim)

		names, rerr := readDirNames(base)
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, n := range names {
			if n != "out" {
				t.Fatalf("Unpack wrote %q outside dst", n)
			}
		}
		if err != nil {
			if len(names) != 0 {
				t.Fatalf("Unpack failed (%v) but left dst behind", err)
			}
			return
		}
		werr := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dst {
				return err
			}
			rel, _ := filepath.Rel(dst, p)
			rel = filepath.ToSlash(rel)
			fi, err := d.Info()
			if err != nil {
				return err
			}
			switch m := fi.Mode(); {
			case m.IsDir():
				if m.Perm() != 0o755 {
					return fmt.Errorf("dir %s has mode %v", rel, m)
				}
			case m.IsRegular():
				if m.Perm() != 0o644 && m.Perm() != 0o755 {
					return fmt.Errorf("file %s has mode %v", rel, m)
				}
			case m&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				if err := CheckSymlink(rel, target); err != nil {
					return err
				}
				// Where the link resolves today, if anywhere, is inside dst.
				if real, err := filepath.EvalSymlinks(p); err == nil {
					realDst, _ := filepath.EvalSymlinks(dst)
					if real != realDst && !strings.HasPrefix(real, realDst+string(filepath.Separator)) {
						return fmt.Errorf("symlink %s resolves to %s, outside dst", rel, real)
					}
				}
			default:
				return fmt.Errorf("%s has unexpected type %v", rel, m.Type())
			}
			return nil
		})
		if werr != nil && !errors.Is(werr, fs.ErrNotExist) {
			t.Fatal(werr)
		}
	})
}

// storedGzip wraps data in a gzip member made of stored (uncompressed)
// deflate blocks. compress/gzip would allocate and clear a compressor of
// several hundred KiB for every input, which dominates an execution.
func storedGzip(data []byte) []byte {
	crc, size := crc32.ChecksumIEEE(data), uint32(len(data))
	out := make([]byte, 0, len(data)+len(data)/65535*5+32)
	out = append(out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), 0xffff)
		final := byte(0)
		if n == len(data) {
			final = 1
		}
		out = append(out, final)
		out = binary.LittleEndian.AppendUint16(out, uint16(n))
		out = binary.LittleEndian.AppendUint16(out, ^uint16(n))
		out = append(out, data[:n]...)
		data = data[n:]
	}
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, size)
}

func TestStoredGzip(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 0xffff, 0x10000, 200_000} {
		data := bytes.Repeat([]byte("tar"), n/3+1)[:n]
		gz, err := gzip.NewReader(bytes.NewReader(storedGzip(data)))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(gz)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: round trip = %d bytes, %v", n, len(got), err)
		}
	}
}
