package artifact

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// PackFiles writes the deterministic tar.gz of a part of the tree at dir: the
// entries named (slash-separated paths relative to dir: regular files,
// directories, symlinks) and every directory above them, in the format [Pack]
// writes. A directory named is packed without its contents (name them too).
// The artifact of a selection that is the whole tree is byte for byte the
// artifact of [Pack]; the same selection of the same files always gives the
// same digest, whatever tree it was taken from.
//
// A name with a "." or ".." component, a backslash, a .git component or a
// symlink above it is refused, as is a symlink that leaves the tree; nothing
// is followed, so a selection never reaches outside dir.
func PackFiles(ctx context.Context, dir string, names []string, w io.Writer) (digest string, size int64, err error) {
	entries, err := selectEntries(dir, names)
	if err != nil {
		return "", 0, err
	}
	return packEntries(ctx, dir, entries, w)
}

// selectEntries checks the names and returns them with their parent
// directories, sorted as Pack sorts a walk.
func selectEntries(dir string, names []string) ([]packEntry, error) {
	seen := map[string]bool{}
	var entries []packEntry
	var add func(rel string, wantDir bool) error
	add = func(rel string, wantDir bool) error {
		if seen[rel] {
			return nil
		}
		if parent := path.Dir(rel); parent != "." {
			if err := add(parent, true); err != nil {
				return err
			}
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("pack %s: %w", dir, err)
		}
		mode := fi.Mode()
		switch {
		case wantDir && !mode.IsDir():
			return fmt.Errorf("pack %s: '%s' is not a directory, and a name below it was selected", dir, rel)
		case mode.IsDir(), mode.IsRegular():
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return fmt.Errorf("pack %s: %w", dir, err)
			}
			if err := CheckSymlink(rel, target); err != nil {
				return fmt.Errorf("pack %s: %w", dir, err)
			}
		default:
			return fmt.Errorf("pack %s: '%s': unsupported file type %s", dir, rel, mode.Type())
		}
		seen[rel] = true
		name := rel
		if mode.IsDir() {
			name += "/"
		}
		entries = append(entries, packEntry{rel: rel, name: name, mode: mode.Type()})
		return nil
	}
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("pack %s: %w", dir, err)
		}
		if err := add(n, false); err != nil {
			return nil, err
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

// checkName refuses a selected name that is not a plain path inside the tree.
func checkName(n string) error {
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsAny(n, "\\\x00") {
		return fmt.Errorf("'%s': not a relative slash-separated path", n)
	}
	for _, c := range strings.Split(n, "/") {
		switch c {
		case "", ".", "..":
			return fmt.Errorf("'%s': empty, '.' or '..' component", n)
		case ".git":
			return fmt.Errorf("'%s': .git is never packed", n)
		}
	}
	return nil
}
