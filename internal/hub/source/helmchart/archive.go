package helmchart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// visitFunc receives each entry of a chart archive: its path below the archive's top
// directory (slash-separated, cleaned, never empty), whether it is a directory, and for a file
// its content, bounded by the budget.
type visitFunc func(rel string, dir bool, content io.Reader) error

// readArchive reads a chart archive (a gzipped tar of one top directory), refusing what a
// chart never holds and an attacker would use: absolute paths, "..", entries outside the top
// directory, links, devices and other special files, and more files or bytes than b allows
// (which it debits). name says which archive, for errors.
func readArchive(data []byte, b *budget, name string, visit visitFunc) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: not a gzipped archive: %w", name, err)
	}
	defer func() { _ = zr.Close() }() // read only: Close has nothing to flush
	tr := tar.NewReader(zr)
	top := ""
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // a pax global header (git archive writes one): no file
		}
		entry := hdr.Name
		var dir bool
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archivers write TypeRegA
		case tar.TypeDir:
			dir = true
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%s: entry %q is a link (to %q): refused", name, entry, hdr.Linkname)
		default:
			return fmt.Errorf("%s: entry %q is not a regular file or directory (tar type %q): refused", name, entry, hdr.Typeflag)
		}
		if strings.HasPrefix(entry, "/") || filepath.IsAbs(entry) || (len(entry) > 1 && entry[1] == ':') {
			return fmt.Errorf("%s: entry %q is an absolute path: refused", name, entry)
		}
		if strings.ContainsAny(entry, "\\\x00") {
			return fmt.Errorf("%s: entry %q has a backslash or NUL in its name: refused", name, entry)
		}
		for _, part := range strings.Split(entry, "/") {
			if part == ".." {
				return fmt.Errorf("%s: entry %q leads out of the archive (..): refused", name, entry)
			}
		}
		clean := path.Clean(entry)
		first, rel, _ := strings.Cut(clean, "/")
		if top == "" {
			top = first
		}
		if first != top || first == "." {
			return fmt.Errorf("%s: entry %q is outside the chart's directory %q: refused", name, entry, top)
		}
		if b.files--; b.files < 0 {
			return fmt.Errorf("%s: more files than the limit allows (the chart and its dependencies together)", name)
		}
		if rel == "" {
			if !dir {
				return fmt.Errorf("%s: entry %q is a file where the chart's directory should be: refused", name, entry)
			}
			continue
		}
		if dir {
			if err := visit(rel, true, nil); err != nil {
				return err
			}
			continue
		}
		lr := &countingReader{r: tr, left: b.bytes}
		if err := visit(rel, false, lr); err != nil {
			if errors.Is(err, errUnpackedTooLarge) {
				return fmt.Errorf("%s: unpacks to more bytes than the limit allows (the chart and its dependencies together)", name)
			}
			return err
		}
		// Drain what visit left, so that it counts too.
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return fmt.Errorf("%s: unpacks to more bytes than the limit allows (the chart and its dependencies together)", name)
		}
		b.bytes = lr.left
	}
	if top == "" {
		return fmt.Errorf("%s: empty archive", name)
	}
	return nil
}

var errUnpackedTooLarge = errors.New("unpacked size over the limit")

// countingReader reads at most left bytes and fails past them.
type countingReader struct {
	r    io.Reader
	left int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errUnpackedTooLarge
	}
	return n, err
}

// unpack writes a chart archive's top directory into dst (which must exist), file modes
// normalised (0644 files, 0755 directories).
func unpack(data []byte, b *budget, name, dst string) error {
	return readArchive(data, b, name, func(rel string, dir bool, content io.Reader) error {
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if dir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s: entry %q appears twice: refused", name, rel)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		_, err = io.Copy(f, content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && !errors.Is(err, errUnpackedTooLarge) {
			err = fmt.Errorf("%s: %s: %w", name, rel, err)
		}
		return err
	})
}

// chartYAMLOf reads Chart.yaml out of a chart archive without unpacking it, checking and
// debiting the whole archive as unpack would.
func chartYAMLOf(data []byte, b *budget, name string) ([]byte, error) {
	var chartYAML []byte
	err := readArchive(data, b, name, func(rel string, dir bool, content io.Reader) error {
		if rel != "Chart.yaml" || dir {
			return nil
		}
		var err error
		chartYAML, err = io.ReadAll(content)
		return err
	})
	if err != nil {
		return nil, err
	}
	if chartYAML == nil {
		return nil, fmt.Errorf("%s: no Chart.yaml in its top directory", name)
	}
	return chartYAML, nil
}
