package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// openRoot returns Root as an absolute path with symlinks resolved, so that containment checks
// compare real paths with real paths.
func openRoot(root string) (string, error) {
	if root == "" {
		return "", &Error{Err: errors.New("artifact root is not set")}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", &Error{Err: fmt.Errorf("artifact root %s: %w", root, err)}
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &Error{Err: fmt.Errorf("artifact root %s: %w", root, err)}
	}
	if fi, err := os.Stat(resolved); err != nil {
		return "", &Error{Err: fmt.Errorf("artifact root %s: %w", root, err)}
	} else if !fi.IsDir() {
		return "", &Error{Err: fmt.Errorf("artifact root %s is not a directory", root)}
	}
	return resolved, nil
}

// resolvePath checks Options.Path and returns it cleaned and slash-separated ("." for the root)
// together with the real directory it names.
func resolvePath(root, p string) (rel, dir string, err error) {
	if p == "" {
		p = "."
	}
	if !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", "", &Error{Err: fmt.Errorf("path %q %w", p, ErrOutsideRoot)}
	}
	rel = path.Clean(filepath.ToSlash(p))
	dir, err = filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", "", &Error{File: rel, Err: fmt.Errorf("path %q: %w", p, err)}
	}
	if !within(root, dir) {
		return "", "", &Error{File: rel, Err: fmt.Errorf("path %q is a symlink that %w", p, ErrOutsideRoot)}
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", "", &Error{File: rel, Err: err}
	} else if !fi.IsDir() {
		return "", "", &Error{File: rel, Err: fmt.Errorf("path %q is not a directory", p)}
	}
	return rel, dir, nil
}

// within reports whether real path p is root or below it.
func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(r)
}

// file is a regular file found under the root.
type file struct {
	rel  string // slash-separated path relative to the root, as the user sees it (through symlinks)
	real string // where to read it
}

// walker lists the regular files under a directory of the root, following symlinks that stay
// inside the root.
type walker struct {
	root string
	// skip reports whether to leave out a directory entry by name (hidden files, .git).
	skip func(name string, isDir bool) bool
	// want reports whether a regular file is returned.
	want func(name string) bool
	// problem decides what a symlink that cannot be followed means: one that leads outside the
	// root (cause wraps ErrOutsideRoot), cannot be resolved, or loops back to a directory being
	// walked. isDir says whether it leads to a directory. Returning nil leaves the entry out.
	problem func(rel string, isDir bool, cause error) error
	// visit, when set, is told of every directory about to be read and every file returned,
	// and stops the walk with its error: Closure bounds a walk with it.
	visit func(rel string, isDir bool) error
}

// walk returns the files under the directory rel (real path dir), sorted by path.
func (w *walker) walk(ctx context.Context, rel, dir string) ([]file, error) {
	var files []file
	if err := w.walkDir(ctx, rel, dir, []string{dir}, &files); err != nil {
		return nil, err
	}
	// Sort by the whole path: a per-directory walk would put "a/x.yaml" before "a.yaml".
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.rel, b.rel) })
	return files, nil
}

func (w *walker) walkDir(ctx context.Context, rel, dir string, chain []string, files *[]file) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.tell(rel, true); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &Error{File: rel, Err: err}
	}
	for _, e := range entries {
		name := e.Name()
		entRel := path.Join(rel, name)
		full := filepath.Join(dir, name)
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(full)
			var fi fs.FileInfo
			if err == nil {
				fi, err = os.Stat(target)
			}
			if err != nil {
				if w.skip(name, false) {
					continue
				}
				if err := w.problem(entRel, false, fmt.Errorf("broken symlink: %w", err)); err != nil {
					return err
				}
				continue
			}
			if w.skip(name, fi.IsDir()) {
				continue
			}
			if !within(w.root, target) {
				if err := w.problem(entRel, fi.IsDir(), fmt.Errorf("symlink %w", ErrOutsideRoot)); err != nil {
					return err
				}
				continue
			}
			if fi.IsDir() {
				if slices.Contains(chain, target) {
					if err := w.problem(entRel, true, errors.New("symlink cycle")); err != nil {
						return err
					}
					continue
				}
				if err := w.walkDir(ctx, entRel, target, append(chain, target), files); err != nil {
					return err
				}
			} else if fi.Mode().IsRegular() && w.want(name) {
				if err := w.tell(entRel, false); err != nil {
					return err
				}
				*files = append(*files, file{rel: entRel, real: target})
			}
			continue
		}
		if w.skip(name, e.IsDir()) {
			continue
		}
		switch {
		case e.IsDir():
			if err := w.walkDir(ctx, entRel, full, append(chain, full), files); err != nil {
				return err
			}
		case typ.IsRegular() && w.want(name):
			if err := w.tell(entRel, false); err != nil {
				return err
			}
			*files = append(*files, file{rel: entRel, real: full})
		}
	}
	return nil
}

func (w *walker) tell(rel string, isDir bool) error {
	if w.visit == nil {
		return nil
	}
	return w.visit(rel, isDir)
}

func isHidden(name string) bool { return strings.HasPrefix(name, ".") }

// isManifest reports whether a file is read as manifests in a plain directory.
func isManifest(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
