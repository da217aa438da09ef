package artifact

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type packEntry struct {
	rel  string // slash-separated, relative to the root
	name string // the tar entry name: rel, plus a trailing slash for directories
	mode fs.FileMode
}

// Pack writes a deterministic tar.gz of the tree at dir to w and returns the
// digest ("sha256:<hex>") and size of the compressed bytes. The format is
// described in the package documentation.
func Pack(ctx context.Context, dir string, w io.Writer) (digest string, size int64, err error) {
	entries, err := walk(ctx, dir)
	if err != nil {
		return "", 0, err
	}

	return packEntries(ctx, dir, entries, w)
}

// packEntries writes entries of the tree at dir as Pack's format to w.
func packEntries(ctx context.Context, dir string, entries []packEntry, w io.Writer) (digest string, size int64, err error) {
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	// BestCompression: artifacts are written once and downloaded by many agents.
	gz, err := gzip.NewWriterLevel(cw, gzip.BestCompression)
	if err != nil {
		return "", 0, fmt.Errorf("pack %s: %w", dir, err)
	}
	tw := tar.NewWriter(gz)
	// The bounds agents unpack with: an artifact over them is of no use to
	// anyone, and packing it would spend the hub's disk on a tenant's tree.
	lim := DefaultLimits()
	if len(entries) > lim.MaxFiles {
		return "", 0, fmt.Errorf("pack %s: %d entries, over the %d entries bound", dir, len(entries), lim.MaxFiles)
	}
	var total int64
	for _, e := range entries { // all of them first: nothing is packed for a tree over the bounds
		if err := checkPackBounds(dir, e, lim, &total); err != nil {
			return "", 0, err
		}
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return "", 0, fmt.Errorf("pack %s: %w", dir, err)
		}
		if err := writeEntry(tw, dir, e); err != nil {
			return "", 0, fmt.Errorf("pack %s: %w", dir, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", 0, fmt.Errorf("pack %s: %w", dir, err)
	}
	if err := gz.Close(); err != nil {
		return "", 0, fmt.Errorf("pack %s: %w", dir, err)
	}
	return formatDigest(h), cw.n, nil
}

// walk lists the tree below dir, sorted by path, checking file types and
// symlink targets on the way so that nothing is written for a bad tree.
func walk(ctx context.Context, dir string) ([]packEntry, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("pack %s: not a directory", dir)
	}
	var entries []packEntry
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		// Unpack refuses backslashes (a path separator on Windows agents), so
		// refuse them here too rather than publish an artifact nobody can use.
		if strings.Contains(rel, "\\") {
			return fmt.Errorf("'%s': backslash in file name", rel)
		}
		mode := d.Type()
		switch {
		case mode.IsDir(), mode.IsRegular():
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := CheckSymlink(rel, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("'%s': unsupported file type %s", rel, mode.Type())
		}
		name := rel
		if mode.IsDir() {
			name += "/"
		}
		entries = append(entries, packEntry{rel: rel, name: name, mode: mode})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	// Sorting by entry name keeps a directory's contents together, right
	// after the directory itself.
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

func writeEntry(tw *tar.Writer, root string, e packEntry) error {
	p := filepath.Join(root, filepath.FromSlash(e.rel))
	hdr := &tar.Header{Name: e.name, ModTime: time.Unix(0, 0)}
	switch {
	case e.mode.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Mode = 0o755
		return tw.WriteHeader(hdr)
	case e.mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		// Checked again: the tree may have changed since the walk.
		if err := CheckSymlink(e.rel, target); err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		hdr.Mode = 0o777
		return tw.WriteHeader(hdr)
	}

	// O_NOFOLLOW: the path was a regular file during the walk; if it has been
	// replaced by a symlink since, fail rather than pack what it points to.
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("'%s': no longer a regular file", e.rel)
	}
	hdr.Typeflag = tar.TypeReg
	hdr.Mode = 0o644
	if fi.Mode()&0o111 != 0 {
		hdr.Mode = 0o755
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.CopyN(tw, f, hdr.Size)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("'%s': file shrank while packing (%d of %d bytes)", e.rel, n, hdr.Size)
	}
	return err
}

// checkPackBounds adds e's size to total and refuses a file over lim.MaxFileBytes or a
// total over lim.MaxBytes, before e is written.
func checkPackBounds(dir string, e packEntry, lim Limits, total *int64) error {
	if !e.mode.IsRegular() {
		return nil
	}
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.rel)))
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	if fi.Size() > lim.MaxFileBytes {
		return fmt.Errorf("pack %s: file '%s' is %d bytes, over the %d bytes file bound", dir, e.rel, fi.Size(), lim.MaxFileBytes)
	}
	*total += fi.Size()
	if *total > lim.MaxBytes {
		return fmt.Errorf("pack %s: files add up to %d bytes with '%s', over the %d bytes total bound", dir, *total, e.rel, lim.MaxBytes)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
