package pathpack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/render"
)

// Store is where the artifacts are: an *artifact.Store.
type Store interface {
	Has(digest string) bool
	Open(digest string) (*os.File, error)
	PutFiles(ctx context.Context, dir string, names []string) (digest string, size int64, err error)
}

// Options configure a Packer.
type Options struct {
	// Store holds the source artifacts and receives the per-path ones.
	Store Store
	// WorkDir holds the unpacked sources, in its subdirectory pathpack, which New empties
	// (what a hub that stopped without Close left); "": a new temporary directory.
	WorkDir string
	// Share makes an artifact available to the other replicas before it is assigned; nil
	// for a hub without replicas.
	Share func(ctx context.Context, digest string) error
	// Limits bound each closure; zero fields: render.DefaultClosureLimits'. Unpack bounds
	// each source unpacked; zero: artifact.DefaultLimits.
	Limits render.ClosureLimits
	Unpack artifact.Limits
}

// Packer turns (source artifact, path) into the per-path artifact, once: it remembers the
// results in memory and, for every source it had to read, keeps the source unpacked while
// assignments still use it. Nothing it keeps needs storing: packing is deterministic, so a
// restarted hub computes the same digests again.
type Packer struct {
	o Options

	mu     sync.Mutex
	narrow map[key]string    // (source digest, path) -> per-path digest
	trees  map[string]string // source digest -> unpacked directory
	// used are the entries and trees the current round asked for: End drops the others.
	used      map[key]bool
	usedTrees map[string]bool
	// has memoises Store.Has for the round: a reschedule asks once per assignment, and
	// nothing deletes an artifact during one (GC runs after it).
	has map[string]bool
}

type key struct{ digest, path string }

// New returns a Packer.
func New(o Options) *Packer {
	if o.Share == nil {
		o.Share = func(context.Context, string) error { return nil }
	}
	if o.WorkDir == "" {
		o.WorkDir, _ = os.MkdirTemp("", "pathpack-") // on failure, the first unpack says why
	} else {
		o.WorkDir = filepath.Join(o.WorkDir, "pathpack")
		os.RemoveAll(o.WorkDir) // created again by the first unpack
	}
	return &Packer{o: o, narrow: map[key]string{}, trees: map[string]string{}, used: map[key]bool{}, usedTrees: map[string]bool{}, has: map[string]bool{}}
}

// Narrow returns the digest of the artifact holding path p's closure in the artifact
// digest, packing it (and sharing it) on the first call. Given a per-path artifact and its
// own path, it returns that artifact: the closure of a closure is itself.
func (p *Packer) Narrow(ctx context.Context, digest, path string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key{digest, path}
	p.used[k] = true
	if n, ok := p.narrow[k]; ok && p.holds(n) {
		if n != digest {
			p.usedTrees[digest] = true // the source's revision is in use: keep it unpacked
			p.used[key{n, path}] = true
		}
		return n, nil
	}
	tree, err := p.tree(ctx, digest)
	if err != nil {
		return "", err
	}
	names, err := render.Closure(ctx, tree, path, p.o.Limits)
	if err != nil {
		return "", fmt.Errorf("artifact %s: %w", digest, err)
	}
	n, _, err := p.o.Store.PutFiles(ctx, tree, names)
	if err != nil {
		return "", fmt.Errorf("artifact %s, path %q: %w", digest, path, err)
	}
	// The other replicas serve it from the shared store: not assigned before it is there.
	if err := p.o.Share(ctx, n); err != nil {
		return "", fmt.Errorf("share the artifact of path %q of %s: %w", path, digest, err)
	}
	p.narrow[k] = n
	p.narrow[key{n, path}] = n
	p.has[n] = true
	p.used[key{n, path}] = true
	return n, nil
}

// tree returns the directory where artifact digest is unpacked, unpacking it the first time.
func (p *Packer) tree(ctx context.Context, digest string) (string, error) {
	p.usedTrees[digest] = true
	if dir, ok := p.trees[digest]; ok {
		return dir, nil
	}
	f, err := p.o.Store.Open(digest)
	if err != nil {
		return "", err // it names the artifact
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	if err := os.MkdirAll(p.o.WorkDir, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(p.o.WorkDir, "source-")
	if err != nil {
		return "", err
	}
	if err := artifact.Unpack(ctx, f, dir, p.o.Unpack); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("unpack artifact %s: %w", digest, err)
	}
	p.trees[digest] = dir
	return dir, nil
}

// End closes a round (a reschedule): what no call to Narrow asked for since the last End is
// forgotten, and the sources no longer in use are removed from disk.
func (p *Packer) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.narrow {
		if !p.used[k] {
			delete(p.narrow, k)
		}
	}
	for d, dir := range p.trees {
		if !p.usedTrees[d] {
			os.RemoveAll(dir)
			delete(p.trees, d)
		}
	}
	clear(p.used)
	clear(p.usedTrees)
	clear(p.has)
}

// Holds reports whether the store holds artifact digest, asking it once per round.
func (p *Packer) Holds(digest string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holds(digest)
}

func (p *Packer) holds(digest string) bool {
	h, ok := p.has[digest]
	if !ok {
		h = p.o.Store.Has(digest)
		p.has[digest] = h
	}
	return h
}

// Close removes every unpacked source.
func (p *Packer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for d, dir := range p.trees {
		os.RemoveAll(dir)
		delete(p.trees, d)
	}
}

// Unpacked lists the source artifacts unpacked now, sorted (for tests and metrics).
func (p *Packer) Unpacked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.trees))
	for d := range p.trees {
		out = append(out, d)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
