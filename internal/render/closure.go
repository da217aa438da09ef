package render

import (
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
)

// ClosureLimits bound the walk of one closure: the tree may be whoever can push to a source.
type ClosureLimits struct {
	// MaxEntries bounds the files, symlinks and directories in a closure.
	MaxEntries int
	// MaxBytes bounds the bytes of its files.
	MaxBytes int64
	// MaxKustomizations bounds the kustomization directories visited.
	MaxKustomizations int
	// MaxDepth bounds how deep references nest (a kustomization naming a base naming a
	// component ...) and how deep a directory walk goes.
	MaxDepth int
}

// DefaultClosureLimits are far above any real release path.
func DefaultClosureLimits() ClosureLimits {
	return ClosureLimits{MaxEntries: 20000, MaxBytes: 512 << 20, MaxKustomizations: 2000, MaxDepth: 64}
}

// ClosureLimitError says which limit a closure passed, and at which file.
type ClosureLimitError struct {
	Path  string // the release path
	File  string // the file or directory at which the limit was passed, relative to the root
	What  string // "entries", "bytes", "kustomizations", "levels deep"
	Limit int64
}

func (e *ClosureLimitError) Error() string {
	return fmt.Sprintf("closure of path %q: %s: more than %d %s", e.Path, e.File, e.Limit, e.What)
}

// maxLinkHops bounds the symlinks followed to resolve one path, as the kernel's ELOOP does.
const maxLinkHops = 40

// Closure returns what rendering path p of the tree at root reads: slash-separated paths
// relative to root of regular files, symlinks and directories, sorted, such that a copy of
// just these (symlinks as symlinks, as artifact.PackFiles makes one) renders p to the same
// objects, or fails with the same error, as the whole tree. It decides what is read with the
// renderer's own code: the chart loader for a chart, the plain walker for a plain directory,
// and for a kustomization kustomize's own types and the reference lists the pre-build checks
// use (dirRefs, fileRefs, pluginConfig.fileRefs).
//
// What the renderer refuses in a kustomization's field (a remote reference, an absolute
// path, one climbing above root) and what names nothing are left out: the kustomization
// naming them is in the closure, so its render refuses them as before. What could not be
// copied without changing the render is refused here, with the renderer's error: a
// referenced file or manifest behind a symlink out of root, a broken symlink or a loop in a
// plain directory or a chart, a chart over the renderer's limits, and p itself leading out
// of root. A path that does not exist has an empty closure. p may also name a regular file
// (a Helm values or patch file, which ReadArtifactFile reads): its closure is that file.
//
// The walk is bounded by lim (zero fields: DefaultClosureLimits'); passing a bound is a
// *ClosureLimitError.
func Closure(ctx context.Context, root, p string, lim ClosureLimits) ([]string, error) {
	lim = lim.withDefaults()
	fail := func(err error) ([]string, error) {
		var le *ClosureLimitError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("closure of path %q: %w", p, err)
	}
	real, err := openRoot(root)
	if err != nil {
		return fail(err)
	}
	if p == "" {
		p = "."
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return fail(&Error{Err: fmt.Errorf("path %q %w", p, ErrOutsideRoot)})
	}
	c := &closure{ctx: ctx, root: real, path: p, lim: lim, entries: map[string]bool{}, visited: map[string]bool{}}
	if err := c.top(path.Clean(filepath.ToSlash(p))); err != nil {
		return fail(err)
	}
	out := make([]string, 0, len(c.entries))
	for e := range c.entries {
		out = append(out, e)
	}
	slices.Sort(out)
	return out, nil
}

func (l ClosureLimits) withDefaults() ClosureLimits {
	d := DefaultClosureLimits()
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxKustomizations <= 0 {
		l.MaxKustomizations = d.MaxKustomizations
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}

type closure struct {
	ctx     context.Context
	root    string // real and absolute
	path    string // the release path, for errors
	lim     ClosureLimits
	entries map[string]bool // real paths (no symlink above them) relative to root
	bytes   int64
	visited map[string]bool // kustomization directories, as kustomize names them
}

// target is a path resolved: real is where it is (no symlinks in it), links the symlinks
// that led there, which a copy must hold too.
type target struct {
	real  string
	info  fs.FileInfo
	links []string
}

// errMissing is what resolve returns for a path that names nothing usable: missing, through
// a file, a symlink loop, or inside .git (which no render reads).
var errMissing = fmt.Errorf("closure: %w", fs.ErrNotExist)

// errEscapes is what resolve returns for a path through a symlink out of the root.
var errEscapes = fmt.Errorf("symlink %w", ErrOutsideRoot)

// resolve follows rel (clean, local) component by component as the file system would,
// through symlinks, each ".." climbing from a real directory.
func (c *closure) resolve(rel string) (target, error) {
	var t target
	comps := splitRel(rel)
	cur := "." // real: no symlink in it
	for hops := 0; len(comps) > 0; {
		name := comps[0]
		comps = comps[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return target{}, errEscapes
			}
			cur = path.Dir(cur)
			continue
		case ".git":
			return target{}, errMissing
		}
		next := path.Join(cur, name)
		fi, err := os.Lstat(c.abs(next))
		if err != nil {
			return target{}, errMissing
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > maxLinkHops {
				return target{}, errMissing
			}
			dest, err := os.Readlink(c.abs(next))
			if err != nil {
				return target{}, errMissing
			}
			if filepath.IsAbs(dest) {
				r, err := filepath.Rel(c.root, dest)
				if err != nil || !filepath.IsLocal(r) {
					return target{}, errEscapes
				}
				cur, dest = ".", filepath.ToSlash(r)
			}
			t.links = append(t.links, next)
			comps = append(splitRel(filepath.ToSlash(dest)), comps...)
			continue
		}
		if len(comps) > 0 && !fi.IsDir() {
			return target{}, errMissing
		}
		cur = next
	}
	fi, err := os.Stat(c.abs(cur))
	if err != nil {
		return target{}, errMissing
	}
	t.real, t.info = cur, fi
	return t, nil
}

func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

func (c *closure) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

// add puts a resolved target into the closure: its symlinks, and the file or directory
// itself (a directory without its contents).
func (c *closure) add(t target) error {
	for _, l := range t.links {
		if err := c.entry(l, 0); err != nil {
			return err
		}
	}
	if t.real == "." {
		return nil // the root is not an entry
	}
	size := int64(0)
	if t.info.Mode().IsRegular() {
		size = t.info.Size()
	}
	return c.entry(t.real, size)
}

// addLink adds a symlink that resolves to nothing (t.real) with the symlinks that led to
// its directory.
func (c *closure) addLink(t target) error {
	for _, l := range append(t.links, t.real) {
		if err := c.entry(l, 0); err != nil {
			return err
		}
	}
	return nil
}

func (c *closure) entry(rel string, size int64) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if c.entries[rel] {
		return nil
	}
	c.entries[rel] = true
	c.bytes += size
	switch {
	case len(c.entries) > c.lim.MaxEntries:
		return c.limit(rel, "entries", int64(c.lim.MaxEntries))
	case c.bytes > c.lim.MaxBytes:
		return c.limit(rel, "bytes", c.lim.MaxBytes)
	}
	return nil
}

func (c *closure) limit(file, what string, n int64) error {
	return &ClosureLimitError{Path: c.path, File: file, What: what, Limit: n}
}

// addPath resolves the path rel, which the renderer reads, and adds it; a path the renderer
// found through symlinks that resolve does not follow is reported, not left out.
func (c *closure) addPath(rel string) error {
	t, err := c.resolve(rel)
	if err != nil {
		return &Error{File: rel, Err: fmt.Errorf("closure: resolve: %w", err)}
	}
	return c.add(t)
}

// top adds the closure of the release path rel.
func (c *closure) top(rel string) error {
	t, err := c.resolve(rel)
	switch {
	case errors.Is(err, ErrOutsideRoot):
		return &Error{File: rel, Err: fmt.Errorf("path %q is a symlink that %w", rel, ErrOutsideRoot)}
	case err != nil:
		return nil // the render fails on it as on the whole tree
	}
	if err := c.add(t); err != nil {
		return err
	}
	if !t.info.IsDir() {
		return nil // a values or patch file
	}
	dir := c.abs(t.real)
	switch {
	case isChartDir(dir):
		return c.chart(rel, dir)
	case findKustomization(dir) != "":
		return c.kustomization(rel, 0)
	default:
		return c.walk(plainWalker(c.root), rel, dir)
	}
}

// walk adds the files w finds below directory rel (real path dir) with the directories
// and symlinks that lead to them, counting them against the limits as it goes.
func (c *closure) walk(w *walker, rel, dir string) error {
	found := 0
	w.visit = func(p string, isDir bool) error {
		if depth := strings.Count(p, "/") - strings.Count(rel, "/"); depth > c.lim.MaxDepth {
			return c.limit(p, "levels deep", int64(c.lim.MaxDepth))
		}
		if found++; found > c.lim.MaxEntries {
			return c.limit(p, "entries", int64(c.lim.MaxEntries))
		}
		return nil
	}
	files, err := w.walk(c.ctx, rel, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := c.addPath(f.rel); err != nil {
			return err
		}
	}
	return nil
}

// chart adds the chart in directory rel (real path dir): the whole directory, subcharts in
// charts/ and what .helmignore leaves out included, as a chart is one unit. It is loaded
// first as the renderer loads it, so that what the render refuses (a symlink out of the
// root, a chart over the renderer's limits) is refused here with the render's error; what
// is left of the directory then holds no symlink Helm would read.
func (c *closure) chart(rel, dir string) error {
	if _, err := loadChartFiles(c.ctx, c.root, rel, dir, defaultHelmLimits); err != nil {
		return err
	}
	return c.walk(copyWalker(c.root, map[string]bool{}), rel, dir)
}

// read reads a resolved file, at most MaxBytes of it.
func (c *closure) read(t target) ([]byte, error) {
	f, err := os.Open(c.abs(t.real))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	return io.ReadAll(io.LimitReader(f, c.lim.MaxBytes))
}
