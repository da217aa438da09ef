package ociartifact

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/Masterminds/semver/v3"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// candidate is a manifest the source may resolve to.
type candidate struct {
	tag      string // "" when pinned by digest
	digest   v1.Hash
	revision string // "<tag>@sha256:<hex>", or the digest alone
}

// resolveTag asks the registry which manifest a tag names (a HEAD request: no manifest is
// downloaded, and registries that count pulls do not count it).
func resolveTag(ctx context.Context, t *target, tag string) (candidate, error) {
	ref := t.repo.Tag(tag)
	desc, err := remote.Head(ref, append(t.opts, remote.WithContext(ctx))...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return candidate{}, t.errorf("tag %s not found", tag)
		}
		return candidate{}, t.errorf("resolve tag %s: %v", tag, err)
	}
	return candidate{tag: tag, digest: desc.Digest, revision: tag + "@" + desc.Digest.String()}, nil
}

// semverCandidates lists the repository's tags that satisfy the range, newest first, at most
// MaxSemverCandidates, not yet resolved to digests. Tags that are not versions are ignored;
// pre-releases only satisfy a range that names one (Masterminds/semver's rule, as for Git
// sources). Of two tags naming one version ("v1.2.0", "1.2.0"), the greater name comes first.
func (f *Fetcher) semverCandidates(ctx context.Context, t *target, rng string) ([]candidate, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, t.errorf("invalid semver range %q: %v", rng, err)
	}
	tags, err := f.listTags(ctx, t)
	if err != nil {
		return nil, err
	}
	type version struct {
		tag string
		v   *semver.Version
	}
	var ok []version
	for _, tag := range tags {
		v, err := semver.NewVersion(tag)
		if err == nil && c.Check(v) {
			ok = append(ok, version{tag, v})
		}
	}
	if len(ok) == 0 {
		return nil, t.errorf("no tag satisfies semver %s (%d tags read)", rng, len(tags))
	}
	sort.Slice(ok, func(i, j int) bool {
		if c := ok[i].v.Compare(ok[j].v); c != 0 {
			return c > 0
		}
		return ok[i].tag > ok[j].tag
	})
	ok = ok[:min(len(ok), f.opts.MaxSemverCandidates)]
	out := make([]candidate, len(ok))
	for i, v := range ok {
		out[i] = candidate{tag: v.tag} // resolved when tried: usually only the newest is
	}
	return out, nil
}

// maxTagPages bounds the pages of tags read: a registry could send empty pages forever.
const maxTagPages = 100

// listTags reads the repository's tags page by page, at most MaxTags.
func (f *Fetcher) listTags(ctx context.Context, t *target) ([]string, error) {
	p, err := remote.NewPuller(t.opts...)
	if err != nil {
		return nil, t.errorf("list tags: %v", err)
	}
	l, err := p.Lister(ctx, t.repo)
	if err != nil {
		return nil, t.errorf("list tags: %v", err)
	}
	var tags []string
	for pages := 0; l.HasNext(); pages++ {
		page, err := l.Next(ctx)
		if err != nil {
			return nil, t.errorf("list tags: %v", err)
		}
		tags = append(tags, page.Tags...)
		if len(tags) > f.opts.MaxTags {
			return nil, t.errorf("list tags: more than %d tags: pin a tag or digest, or prune old tags", f.opts.MaxTags)
		}
		if pages >= maxTagPages {
			return nil, t.errorf("list tags: more than %d pages", maxTagPages)
		}
	}
	return tags, nil
}
