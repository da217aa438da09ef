package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/flotilla/flotilla/internal/artifact"
)

// maxSymlinkTarget bounds how much of a symlink blob is read: real targets
// are short, and a huge "symlink" would be a way to allocate memory.
const maxSymlinkTarget = 4096

// Checkout writes the tree of commit (a 40-digit hex hash, typically a
// Resolved.Commit) into dst, which must be absent or an empty directory.
// It writes directories, files (mode 0644, or 0755 when executable in Git)
// and symlinks that artifact.CheckSymlink allows; no .git. Submodules are
// left out: they are other repositories, with revisions of their own. If
// the mirror lacks the commit, Checkout fetches once before giving up. On
// error dst is removed if Checkout created it, emptied otherwise.
func (p *Poller) Checkout(ctx context.Context, g Git, commit string, dst string) (err error) {
	ep, err := g.validate()
	if err != nil {
		return err
	}
	if g, err = p.opts.Policy.authorize(g, ep); err != nil {
		return err
	}
	if err := checkCommitHash(commit); err != nil {
		return g.errorf("checkout %q: %w", commit, err)
	}
	hash := plumbing.NewHash(strings.ToLower(commit))

	m := p.mirror(mirrorKey(ep, g), g.URL)
	if err := m.lock(ctx); err != nil {
		return g.errorf("wait for the mirror of %s: %w", redact(g.URL), err)
	}
	unlock := m.unlock
	defer func() { unlock() }()

	repo, err := m.open()
	if err != nil {
		return g.errorf("%w", err)
	}
	c, err := repo.CommitObject(hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// A Poller that has not fetched this URL yet (after a restart), or
		// a commit newer than the last fetch: fetch whatever MaxAge says.
		if err := p.fetch(ctx, g, ep, m, &unlock); err != nil {
			return err
		}
		c, err = repo.CommitObject(hash)
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return g.errorf("checkout: commit %s not found in %s", commit, redact(g.URL))
	}
	if err != nil {
		return g.errorf("checkout %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return g.errorf("checkout %s: %w", commit, err)
	}

	created, err := artifact.PrepareEmptyDir(dst)
	if err != nil {
		return g.errorf("checkout %s into %s: %w", commit, dst, err)
	}
	defer func() {
		if err != nil {
			if cerr := cleanDst(dst, created); cerr != nil {
				err = errors.Join(err, g.errorf("clean up %s: %w", dst, cerr))
			}
		}
	}()
	create := p.createFile
	if create == nil {
		create = createFile
	}
	w := &treeWriter{ctx: ctx, repo: repo, create: create, budget: budget{lim: p.opts.Limits.WithDefaults(), source: g.Name, revision: shortCommit(commit)}}
	if err := w.write(tree, dst, ""); err != nil {
		var be *BoundError
		if errors.As(err, &be) {
			return be // it names the source and the revision itself
		}
		return g.errorf("checkout %s into %s: %w", commit, dst, err)
	}
	return nil
}

// shortCommit abbreviates a commit hash for messages, as Git does.
func shortCommit(commit string) string {
	if len(commit) > 7 {
		return strings.ToLower(commit[:7])
	}
	return commit
}

type treeWriter struct {
	ctx  context.Context
	repo *gogit.Repository
	// budget bounds entries, each file and the total, checked before anything is written.
	budget budget
	create func(path string, mode fs.FileMode) (io.WriteCloser, error)
}

// write writes tree into dir, whose path in the tree is rel ("" at the
// root). Every directory is created here, so no path ever goes through a
// symlink: that is what makes artifact.CheckSymlink's rule sufficient.
func (w *treeWriter) write(tree *object.Tree, dir, rel string) error {
	for _, e := range tree.Entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		name := e.Name
		if rel != "" {
			name = rel + "/" + e.Name
		}
		if err := checkEntryName(e.Name); err != nil {
			return fmt.Errorf("'%s': %w", name, err)
		}
		full := filepath.Join(dir, e.Name)
		if e.Mode != filemode.Submodule {
			if err := w.budget.entry(name); err != nil {
				return err
			}
		}
		switch e.Mode {
		case filemode.Dir:
			sub, err := w.repo.TreeObject(e.Hash)
			if err != nil {
				return fmt.Errorf("'%s': %w", name, err)
			}
			if err := os.Mkdir(full, 0o755); err != nil {
				return fmt.Errorf("'%s': %w", name, err)
			}
			if err := w.write(sub, full, name); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			mode := fs.FileMode(0o644)
			if e.Mode == filemode.Executable {
				mode = 0o755
			}
			if err := w.file(e.Hash, name, full, mode); err != nil {
				var be *BoundError
				if errors.As(err, &be) {
					return err
				}
				return fmt.Errorf("'%s': %w", name, err)
			}
		case filemode.Symlink:
			target, err := w.symlinkTarget(e.Hash)
			if err != nil {
				return fmt.Errorf("'%s': %w", name, err)
			}
			if err := artifact.CheckSymlink(name, target); err != nil {
				return err
			}
			if err := os.Symlink(target, full); err != nil {
				return fmt.Errorf("'%s': %w", name, err)
			}
		case filemode.Submodule:
		default:
			return fmt.Errorf("'%s': unsupported mode %s", name, e.Mode)
		}
	}
	return nil
}

func (w *treeWriter) file(h plumbing.Hash, name, full string, mode fs.FileMode) error {
	blob, err := w.repo.BlobObject(h)
	if err != nil {
		return err
	}
	// blob.Size comes from the object's header: a blob over the bounds costs
	// nothing, not a byte of it is inflated or written.
	if err := w.budget.file(name, blob.Size); err != nil {
		return err
	}
	r, err := blob.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := w.create(full, mode)
	if err != nil {
		return err
	}
	// At most the size checked: the header and the content must agree.
	n, err := io.Copy(f, io.LimitReader(r, blob.Size+1))
	if err == nil && n != blob.Size {
		err = fmt.Errorf("blob %s holds %d bytes, its header says %d", h, n, blob.Size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Explicit chmod: the umask must not change the tree that gets packed.
	return os.Chmod(full, mode)
}

func (w *treeWriter) symlinkTarget(h plumbing.Hash) (string, error) {
	blob, err := w.repo.BlobObject(h)
	if err != nil {
		return "", err
	}
	if blob.Size > maxSymlinkTarget {
		return "", fmt.Errorf("symlink target of %d bytes", blob.Size)
	}
	r, err := blob.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// checkEntryName refuses tree entry names that Git itself would refuse
// (fsck) but a crafted repository can still hold.
func checkEntryName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return errors.New("invalid name")
	case strings.ContainsAny(name, "/\\\x00"):
		return errors.New("slash, backslash or NUL in name")
	case strings.EqualFold(name, ".git"):
		return errors.New(".git inside the tree")
	}
	return nil
}

func cleanDst(dst string, created bool) error {
	if created {
		return os.RemoveAll(dst)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dst, e.Name())))
	}
	return errors.Join(errs...)
}
