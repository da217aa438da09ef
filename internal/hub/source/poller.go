package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/flotilla/flotilla/internal/artifact"
)

// Options tune a Poller.
type Options struct {
	// MaxAge lets a Resolve use a mirror fetched less than MaxAge ago without
	// fetching again: set it a little below the poll interval so that one
	// poll over many releases of the same source fetches once. Zero means
	// every Resolve fetches, except that Resolves waiting for a fetch that
	// started after they were called use its result.
	MaxAge time.Duration
	// FetchTimeout bounds one fetch when the caller's context has no earlier
	// deadline.
	FetchTimeout time.Duration
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// Policy is what the hub's operator lets sources use (named credentials, http://,
	// file://). Nil: every transport is allowed and no credentials are resolved by name or
	// file; the hub always sets one.
	Policy *Policy
	// Limits bounds what a Checkout writes: each file, the total and the entries, checked
	// from Git's object headers before a byte is written. A zero field takes its
	// artifact.DefaultLimits value, what an agent unpacks at most.
	Limits artifact.Limits
}

// DefaultOptions returns the options NewPoller uses.
func DefaultOptions() Options {
	return Options{FetchTimeout: 2 * time.Minute}
}

// Poller resolves Git sources through bare mirrors kept under a cache
// directory, one per repository URL, so that each poll fetches only new
// objects. It is safe for concurrent use. Only one Poller may use a cache
// directory at a time.
type Poller struct {
	cacheDir string
	opts     Options

	mu      sync.Mutex
	mirrors map[string]*mirror // by mirrorKey

	// createFile creates a checkout's files (os.OpenFile, exclusive); a test sees through it
	// which files a refused checkout began to write.
	createFile func(path string, mode fs.FileMode) (io.WriteCloser, error)
}

func createFile(path string, mode fs.FileMode) (io.WriteCloser, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}

// NewPoller returns a Poller with DefaultOptions keeping its mirrors under
// cacheDir.
func NewPoller(cacheDir string) *Poller {
	return NewPollerWithOptions(cacheDir, DefaultOptions())
}

// NewPollerWithOptions returns a Poller with the given options.
func NewPollerWithOptions(cacheDir string, opts Options) *Poller {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Poller{cacheDir: cacheDir, opts: opts, mirrors: map[string]*mirror{}}
}

// mirror is the bare repository for one URL. Everything but started is
// guarded by holding sem: go-git's storage is not safe for concurrent use,
// and a fetch and a read of one repository must not interleave.
type mirror struct {
	url  string // as fetched from
	path string
	sem  chan struct{}

	// started counts fetches begun; a caller that notes it before waiting
	// for sem can tell whether a fetch that began later has completed.
	started atomic.Uint64
	done    uint64              // number of the last successful fetch
	fetched time.Time           // when that fetch began
	head    *plumbing.Reference // the remote's HEAD at that fetch, if it had one
	repo    *gogit.Repository
}

func (p *Poller) mirror(key, url string) *mirror {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.mirrors[key]
	if !ok {
		sum := sha256.Sum256([]byte(key))
		m = &mirror{
			url:  url,
			path: filepath.Join(p.cacheDir, hex.EncodeToString(sum[:16])+".git"),
			sem:  make(chan struct{}, 1),
		}
		p.mirrors[key] = m
	}
	return m
}

// lock waits for the mirror, or for ctx.
func (m *mirror) lock(ctx context.Context) error {
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *mirror) unlock() { <-m.sem }

// open opens the bare repository, creating it on first use and recreating
// it when it cannot be opened (a crash during creation, a damaged cache):
// a mirror holds nothing that a fetch cannot bring back.
func (m *mirror) open() (*gogit.Repository, error) {
	if m.repo != nil {
		return m.repo, nil
	}
	repo, err := gogit.PlainOpen(m.path)
	if err == nil {
		if rem, rerr := repo.Remote("origin"); rerr != nil || len(rem.Config().URLs) != 1 || rem.Config().URLs[0] != m.url {
			err = errors.New("remote origin does not match")
		}
	}
	if err != nil {
		if rerr := os.RemoveAll(m.path); rerr != nil {
			return nil, fmt.Errorf("mirror %s: %w", m.path, rerr)
		}
		if repo, err = gogit.PlainInit(m.path, true); err != nil {
			return nil, fmt.Errorf("mirror %s: %w", m.path, err)
		}
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{m.url}}); err != nil {
			os.RemoveAll(m.path)
			return nil, fmt.Errorf("mirror %s: %w", m.path, err)
		}
	}
	m.repo = repo
	return repo, nil
}

// mirrorRefSpecs mirror branches and tags under their own names; "+" since
// branches may be force-pushed and tags moved, and the mirror must follow.
func mirrorRefSpecs() []config.RefSpec {
	return []config.RefSpec{
		"+refs/heads/*:refs/heads/*",
		"+refs/tags/*:refs/tags/*",
	}
}

// sync brings the mirror up to date unless a fresh enough fetch makes that
// unnecessary. The caller holds the mirror; *unlock is how it lets go, and
// sync replaces it when it must leave a fetch running (see fetch).
func (p *Poller) sync(ctx context.Context, g Git, ep *transport.Endpoint, m *mirror, seen uint64, unlock *func()) error {
	if m.done > seen {
		return nil // a fetch that began after our call has completed
	}
	if p.opts.MaxAge > 0 && m.done > 0 && p.opts.Now().Sub(m.fetched) < p.opts.MaxAge {
		return nil
	}
	return p.fetch(ctx, g, ep, m, unlock)
}

// fetch runs one fetch. go-git honours the context over HTTP and for local
// repositories, but its ssh handshake does not; so the fetch runs in its own
// goroutine and, if ctx ends first, fetch returns at once and leaves the
// goroutine to finish and release the mirror.
func (p *Poller) fetch(ctx context.Context, g Git, ep *transport.Endpoint, m *mirror, unlock *func()) error {
	timeout := p.opts.FetchTimeout
	if timeout <= 0 {
		timeout = DefaultOptions().FetchTimeout
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()

	n := m.started.Add(1)
	began := p.opts.Now()
	type result struct {
		head *plumbing.Reference
		err  error
	}
	done := make(chan result, 1)
	go func() {
		head, err := p.doFetch(ctx, g, ep, m, time.Until(dl))
		done <- result{head, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			r.err = redactError(r.err, g.URL)
			if errors.Is(r.err, transport.ErrAuthenticationRequired) && !g.Auth.IsZero() {
				return g.errorf("fetch %s: credentials %s rejected: %w", redact(g.URL), g.Auth, r.err)
			}
			return g.errorf("fetch %s: %w", redact(g.URL), r.err)
		}
		m.done, m.fetched, m.head = n, began, r.head
		return nil
	case <-ctx.Done():
		release := *unlock
		*unlock = func() {}
		go func() {
			<-done
			release()
		}()
		return g.errorf("fetch %s: %w", redact(g.URL), ctx.Err())
	}
}

// doFetch updates the mirror and returns the remote's HEAD (nil if it
// advertised none).
func (p *Poller) doFetch(ctx context.Context, g Git, ep *transport.Endpoint, m *mirror, timeout time.Duration) (*plumbing.Reference, error) {
	repo, err := m.open()
	if err != nil {
		return nil, err
	}
	auth, err := g.Auth.authMethod(ep, timeout)
	if err != nil {
		return nil, err
	}
	remote, err := repo.Remote("origin")
	if err != nil {
		return nil, err
	}

	// Listing first costs one round trip and tells both whether anything
	// changed (an unchanged repository then costs nothing more) and where
	// the remote HEAD points, which a fetch does not record.
	refs, err := remote.ListContext(ctx, &gogit.ListOptions{Auth: auth, PeelingOption: gogit.IgnorePeeled})
	if err != nil {
		return nil, err
	}
	changed, err := refsDiffer(repo, refs)
	if err != nil {
		return nil, err
	}
	if changed {
		err := remote.FetchContext(ctx, &gogit.FetchOptions{
			RefSpecs: mirrorRefSpecs(),
			Auth:     auth,
			Tags:     gogit.NoTags, // the refspecs already take every tag
			Force:    true,
			Prune:    true,
		})
		if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
			return nil, err
		}
	}
	for _, r := range refs {
		if r.Name() == plumbing.HEAD {
			return r, nil
		}
	}
	return nil, nil
}

// refsDiffer reports whether the remote's branches and tags differ from the
// mirror's.
func refsDiffer(repo *gogit.Repository, remote []*plumbing.Reference) (bool, error) {
	want := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, r := range remote {
		if (r.Name().IsBranch() || r.Name().IsTag()) && r.Type() == plumbing.HashReference {
			want[r.Name()] = r.Hash()
		}
	}
	iter, err := repo.References()
	if err != nil {
		return false, err
	}
	defer iter.Close()
	have := 0
	differ := false
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if !r.Name().IsBranch() && !r.Name().IsTag() {
			return nil
		}
		have++
		if h, ok := want[r.Name()]; !ok || h != r.Hash() {
			differ = true
		}
		return nil
	})
	return differ || have != len(want), err
}
