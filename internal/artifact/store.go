package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	storeSubdir = "sha256"
	storeSuffix = ".tar.gz"
	tempPrefix  = ".tmp-"
)

// Store keeps artifacts on disk as <dir>/sha256/<hex>.tar.gz. It holds no
// state besides its directory, so any number of Stores (and processes) may
// share one directory.
type Store struct {
	dir string
}

// NewStore returns a Store rooted at dir, creating the directory if needed.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, storeSubdir), 0o755); err != nil {
		return nil, fmt.Errorf("artifact store %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the directory the Store was created with.
func (s *Store) Dir() string { return s.dir }

// PutDir packs the tree at dir into the store and returns its digest and
// size. Putting a tree whose artifact already exists leaves the stored file
// untouched. Concurrent calls are safe: each packs into its own temporary
// file, and renaming identical content over identical content is harmless.
func (s *Store) PutDir(ctx context.Context, dir string) (digest string, size int64, err error) {
	return s.put(func(w io.Writer) (string, int64, error) { return Pack(ctx, dir, w) })
}

// PutFiles packs the entries names of the tree at dir ([PackFiles]) into the
// store and returns the artifact's digest and size, as PutDir does.
func (s *Store) PutFiles(ctx context.Context, dir string, names []string) (digest string, size int64, err error) {
	return s.put(func(w io.Writer) (string, int64, error) { return PackFiles(ctx, dir, names, w) })
}

// put stores what pack writes under its digest.
func (s *Store) put(pack func(io.Writer) (string, int64, error)) (digest string, size int64, err error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, storeSubdir), tempPrefix+"*")
	if err != nil {
		return "", 0, fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close() // already failing: the first error is the one returned
			os.Remove(tmpName)
		}
	}()

	digest, size, err = pack(tmp)
	if err != nil {
		return "", 0, err
	}
	// Sync before rename: after a crash, a name must never point at a
	// partially written artifact, since nothing re-verifies it on the hub.
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return "", 0, fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	final, err := s.Path(digest)
	if err != nil {
		return "", 0, err
	}
	if s.Has(digest) {
		os.Remove(tmpName)
		return digest, size, nil
	}
	if err := os.Rename(tmpName, final); err != nil {
		return "", 0, fmt.Errorf("artifact %s: %w", digest, err)
	}
	return digest, size, nil
}

// Path returns where the artifact with the given digest is (or would be)
// stored. It fails for anything but a well-formed digest, so the result is
// always a file directly inside the store's sha256 directory.
func (s *Store) Path(digest string) (string, error) {
	hx, err := ParseDigest(digest)
	if err != nil {
		return "", fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	return filepath.Join(s.dir, storeSubdir, hx+storeSuffix), nil
}

// Open opens the artifact with the given digest for reading.
func (s *Store) Open(digest string) (*os.File, error) {
	p, err := s.Path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", digest, err)
	}
	return f, nil
}

// Has reports whether the artifact with the given digest is stored. It is
// false for a malformed digest.
func (s *Store) Has(digest string) bool {
	p, err := s.Path(digest)
	if err != nil {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// List returns the digests of all stored artifacts, sorted.
func (s *Store) List() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, storeSubdir))
	if err != nil {
		return nil, fmt.Errorf("artifact store %s: %w", s.dir, err)
	}
	var out []string
	for _, e := range entries {
		hx, ok := strings.CutSuffix(e.Name(), storeSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		d := digestPrefix + hx
		if _, err := ParseDigest(d); err != nil {
			continue // not ours: leave it alone
		}
		out = append(out, d)
	}
	sort.Strings(out)
	return out, nil
}

// GC deletes every stored artifact whose digest is not in keep and returns
// the deleted digests, sorted. Temporary files are left alone, since a
// concurrent PutDir may still be writing them.
func (s *Store) GC(keep map[string]bool) (removed []string, err error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, d := range all {
		if keep[d] {
			continue
		}
		p, _ := s.Path(d) // d came from List, so it is well formed
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("artifact %s: %w", d, err))
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}
