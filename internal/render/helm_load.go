package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

// loadChartFiles reads the chart in dir (rel inside root) as Helm's loader.LoadDir does
// (.helmignore rules and Helm's default ones, one directory at a time in name order, a UTF-8
// byte order mark trimmed), but confined and bounded: a symlink that leads outside the root is
// refused (LoadDir follows any), a broken one or a loop is an error, and the chart's files, the
// files in its subchart archives counted uncompressed, may not exceed lim.
func loadChartFiles(ctx context.Context, root, rel, dir string, lim helmLimits) ([]*loader.BufferedFile, error) {
	l := &chartLoader{root: root, rel: rel, lim: lim, rules: ignore.Empty()}
	ignoreFile := filepath.Join(dir, ignore.HelmIgnore)
	if _, err := os.Lstat(ignoreFile); err == nil {
		real, err := filepath.EvalSymlinks(ignoreFile)
		if err != nil {
			return nil, l.problem(ignore.HelmIgnore, err)
		}
		if !within(root, real) {
			return nil, l.problem(ignore.HelmIgnore, fmt.Errorf("symlink %w", ErrOutsideRoot))
		}
		data, err := l.read(ignore.HelmIgnore, real)
		if err != nil {
			return nil, err
		}
		rules, err := ignore.Parse(bytes.NewReader(data))
		if err != nil {
			return nil, &Error{File: joinRel(rel, ignore.HelmIgnore), Err: err}
		}
		l.rules = rules
		l.files, l.bytes = 0, 0 // read again below, unless it ignores itself
	}
	l.rules.AddDefaults()
	if err := l.walk(ctx, "", dir, []string{dir}); err != nil {
		return nil, err
	}
	return l.out, nil
}

type chartLoader struct {
	root, rel string
	lim       helmLimits
	rules     *ignore.Rules
	files     int   // files read so far
	bytes     int64 // bytes read so far
	out       []*loader.BufferedFile
}

// problem is an *Error about the file at name inside the chart.
func (l *chartLoader) problem(name string, err error) error {
	return &Error{File: joinRel(l.rel, name), Err: err}
}

func (l *chartLoader) walk(ctx context.Context, prefix, dir string, chain []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir) // sorted by name, as Helm's walk
	if err != nil {
		return l.problem(prefix, err)
	}
	for _, e := range entries {
		name := path.Join(prefix, e.Name())
		full := filepath.Join(dir, e.Name())
		real := full
		var fi fs.FileInfo
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(full)
			if err != nil {
				return l.problem(name, fmt.Errorf("broken symlink: %w", err))
			}
			if fi, err = os.Stat(target); err != nil {
				return l.problem(name, err)
			}
			real = target
		} else if fi, err = e.Info(); err != nil {
			return l.problem(name, err)
		}
		if l.rules.Ignore(name, fi) {
			continue // a directory's rule skips all it holds, as in Helm
		}
		if !within(l.root, real) {
			return l.problem(name, fmt.Errorf("symlink %w", ErrOutsideRoot))
		}
		if fi.IsDir() {
			if slices.Contains(chain, real) {
				return l.problem(name, errors.New("symlink cycle"))
			}
			if err := l.walk(ctx, name, real, append(chain, real)); err != nil {
				return err
			}
			continue
		}
		if !fi.Mode().IsRegular() {
			return l.problem(name, errors.New("not a regular file (Helm loads only regular files)"))
		}
		data, err := l.read(name, real)
		if err != nil {
			return err
		}
		if isSubchartArchive(name) {
			if err := l.checkArchive(name, data, 0); err != nil {
				return err
			}
		}
		l.out = append(l.out, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(data, utf8BOM)})
	}
	return nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// read reads one file of the chart, counting it against the limits.
func (l *chartLoader) read(name, real string) ([]byte, error) {
	if err := l.count(name, 1, 0); err != nil {
		return nil, err
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, l.problem(name, err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	// Read one byte past what is left, so that a file growing while it is read still fails.
	data, err := io.ReadAll(io.LimitReader(f, l.lim.chartBytes-l.bytes+1))
	if err != nil {
		return nil, l.problem(name, err)
	}
	if err := l.count(name, 0, int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

func (l *chartLoader) count(name string, files int, n int64) error {
	l.files += files
	l.bytes += n
	if l.files > l.lim.chartFiles {
		return l.problem(name, fmt.Errorf("chart has more than %d files", l.lim.chartFiles))
	}
	if l.bytes > l.lim.chartBytes {
		return l.problem(name, fmt.Errorf("chart is larger than %d bytes (subchart archives counted uncompressed)", l.lim.chartBytes))
	}
	return nil
}

// isSubchartArchive reports whether Helm's loader unpacks the file at name: a .tgz directly in
// a charts/ directory.
func isSubchartArchive(name string) bool {
	return strings.HasSuffix(name, ".tgz") && path.Base(path.Dir(name)) == "charts"
}

// maxArchiveDepth bounds subchart archives inside subchart archives.
const maxArchiveDepth = 10

// checkArchive counts the files of a subchart archive, and of the archives inside it, against
// the limits before Helm's loader unpacks them in memory: Helm's own bound is 100 MiB per
// archive, and a few kilobytes of gzip expand to that.
func (l *chartLoader) checkArchive(name string, data []byte, depth int) error {
	if depth > maxArchiveDepth {
		return l.problem(name, fmt.Errorf("subchart archives nested more than %d deep", maxArchiveDepth))
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return l.problem(name, fmt.Errorf("subchart archive: %w", err))
	}
	tr := tar.NewReader(zr)
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return l.problem(name, fmt.Errorf("subchart archive: %w", err))
		}
		if hd.Typeflag != tar.TypeReg {
			continue // Helm skips directories and refuses the rest itself
		}
		inner := name + ":" + hd.Name
		if err := l.count(inner, 1, 0); err != nil {
			return err
		}
		content, err := io.ReadAll(io.LimitReader(tr, l.lim.chartBytes-l.bytes+1))
		if err != nil {
			return l.problem(name, fmt.Errorf("subchart archive: %w", err))
		}
		if err := l.count(inner, 0, int64(len(content))); err != nil {
			return err
		}
		if isSubchartArchive(hd.Name) {
			if err := l.checkArchive(inner, content, depth+1); err != nil {
				return err
			}
		}
	}
}
