package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// tarEntry is one entry of a hand-built archive; body is written for regular
// files only.
type tarEntry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))}, body: body}
}

func dirEnt(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}}
}

func symlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

func typed(name string, flag byte) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: flag, Name: name, Linkname: "x", Mode: 0o644}}
}

// buildTarGz writes entries as given, with no checks, to make malicious
// archives.
func buildTarGz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	return gzipBytes(t, buildTar(t, entries...), gzip.DefaultCompression)
}

func gzipBytes(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gz.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// buildTar is buildTarGz without the compression.
func buildTar(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("write header %s: %v", h.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatalf("write body %s: %v", h.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// snapshot describes a tree as path -> "dir", "file <mode> <content>" or
// "symlink -> <target>", for comparison with cmp.Diff.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink -> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %o %s", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTree creates files under root; a value "->x" makes a symlink to x, a
// key ending in "/" a directory, a value starting with "#!" an executable.
func writeTree(t testing.TB, root string, files map[string]string, order []string) {
	t.Helper()
	for _, name := range order {
		content := files[name]
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		switch {
		case name[len(name)-1] == '/':
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		case len(content) > 2 && content[:2] == "->":
			if err := os.Symlink(content[2:], p); err != nil {
				t.Fatal(err)
			}
		default:
			mode := fs.FileMode(0o600)
			if len(content) > 1 && content[:2] == "#!" {
				mode = 0o700
			}
			if err := os.WriteFile(p, []byte(content), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}
