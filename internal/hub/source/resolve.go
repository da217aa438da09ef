package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Resolve fetches the source's repository into its mirror (only new
// objects; nothing when no branch or tag moved) and resolves the revision
// the source asks for. See Resolved for the result's format.
func (p *Poller) Resolve(ctx context.Context, g Git) (Resolved, error) {
	ep, err := g.validate()
	if err != nil {
		return Resolved{}, err
	}
	if g, err = p.opts.Policy.authorize(g, ep); err != nil {
		return Resolved{}, err
	}
	var constraint *semver.Constraints
	if g.Semver != "" {
		if constraint, err = semver.NewConstraint(g.Semver); err != nil {
			return Resolved{}, g.errorf("invalid semver range %q: %w", g.Semver, err)
		}
	}

	m := p.mirror(mirrorKey(ep, g), g.URL)
	seen := m.started.Load()
	if err := m.lock(ctx); err != nil {
		return Resolved{}, g.errorf("wait for the mirror of %s: %w", redact(g.URL), err)
	}
	unlock := m.unlock
	defer func() { unlock() }()

	if err := p.sync(ctx, g, ep, m, seen, &unlock); err != nil {
		return Resolved{}, err
	}
	repo := m.repo

	var (
		ref    plumbing.ReferenceName
		commit plumbing.Hash
	)
	switch {
	case g.Commit != "":
		commit = plumbing.NewHash(strings.ToLower(g.Commit))
	case g.Tag != "":
		ref = plumbing.NewTagReferenceName(g.Tag)
		if commit, err = peel(repo, ref); err != nil {
			return Resolved{}, g.errorf("tag '%s' in %s: %w", g.Tag, redact(g.URL), err)
		}
	case g.Semver != "":
		tag, err := highestTag(repo, constraint)
		if err != nil {
			return Resolved{}, g.errorf("%w", err)
		}
		if tag == "" {
			return Resolved{}, g.errorf("no tag matches semver %s in %s", g.Semver, redact(g.URL))
		}
		ref = plumbing.NewTagReferenceName(tag)
		if commit, err = peel(repo, ref); err != nil {
			return Resolved{}, g.errorf("tag '%s' in %s: %w", tag, redact(g.URL), err)
		}
	case g.Branch != "":
		ref = plumbing.NewBranchReferenceName(g.Branch)
		r, err := repo.Reference(ref, false)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return Resolved{}, g.errorf("branch '%s' not found in %s", g.Branch, redact(g.URL))
		}
		if err != nil {
			return Resolved{}, g.errorf("branch '%s': %w", g.Branch, err)
		}
		commit = r.Hash()
	default:
		if ref, commit, err = defaultBranch(repo, m.head); err != nil {
			return Resolved{}, g.errorf("default branch of %s: %w", redact(g.URL), err)
		}
	}

	c, err := repo.CommitObject(commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return Resolved{}, g.errorf("commit %s not found in %s", commit, redact(g.URL))
	}
	if err != nil {
		return Resolved{}, g.errorf("commit %s: %w", commit, err)
	}
	rev := "sha1:" + commit.String()
	if ref != "" {
		rev = ref.Short() + "@" + rev
	}
	return Resolved{
		Revision: rev,
		Commit:   commit.String(),
		Ref:      ref.String(),
		Author:   fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Message:  strings.TrimRight(c.Message, " \t\r\n"),
		Time:     c.Committer.When,
	}, nil
}

// peel follows a reference, and tag objects, down to a commit.
func peel(repo *gogit.Repository, name plumbing.ReferenceName) (plumbing.Hash, error) {
	r, err := repo.Reference(name, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, errors.New("not found")
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := r.Hash()
	// Tags of tags exist; a bound keeps a malicious cycle from looping.
	for range 16 {
		obj, err := repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			t, err := object.DecodeTag(repo.Storer, obj)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			h = t.Target
		default:
			return plumbing.ZeroHash, fmt.Errorf("points to a %s, not a commit", obj.Type())
		}
	}
	return plumbing.ZeroHash, errors.New("too many nested tags")
}

// highestTag returns the name of the highest tag satisfying c, or "" if
// none does. Tags that do not parse as versions are ignored. Of two tags
// naming the same version ("v1.2.0" and "1.2.0") the greater name wins, so
// the choice does not depend on iteration order.
func highestTag(repo *gogit.Repository, c *semver.Constraints) (string, error) {
	iter, err := repo.Tags()
	if err != nil {
		return "", err
	}
	defer iter.Close()
	var (
		best    *semver.Version
		bestTag string
	)
	err = iter.ForEach(func(r *plumbing.Reference) error {
		name := r.Name().Short()
		v, err := semver.NewVersion(name)
		if err != nil || !c.Check(v) {
			return nil
		}
		if best == nil || v.GreaterThan(best) || v.Equal(best) && name > bestTag {
			best, bestTag = v, name
		}
		return nil
	})
	return bestTag, err
}

// defaultBranch resolves the remote's HEAD as seen at the last fetch.
func defaultBranch(repo *gogit.Repository, head *plumbing.Reference) (plumbing.ReferenceName, plumbing.Hash, error) {
	if head == nil {
		return "", plumbing.ZeroHash, errors.New("the remote did not advertise a HEAD; set a branch")
	}
	if head.Type() != plumbing.SymbolicReference {
		// A detached remote HEAD: follow the commit, if a branch or tag
		// brought it into the mirror.
		return plumbing.HEAD, head.Hash(), nil
	}
	r, err := repo.Reference(head.Target(), false)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", plumbing.ZeroHash, fmt.Errorf("HEAD points to '%s', which does not exist", head.Target())
	}
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	return head.Target(), r.Hash(), nil
}
