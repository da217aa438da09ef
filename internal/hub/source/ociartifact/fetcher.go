package ociartifact

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/hub/source"
)

// Options configure a Fetcher.
type Options struct {
	// Policy resolves the credentials a source names and the hosts they may go to. Nil: no
	// source may name credentials.
	Policy *source.Policy
	// Keys are the public keys sources may name in verify.cosign.publicKeys, by name.
	Keys map[string]Key
	// Transport carries the requests to registries. Default: http.DefaultTransport's settings
	// with TLSConfig.
	Transport http.RoundTripper
	// TLSConfig is used by the default transport (e.g. RootCAs of a private registry).
	TLSConfig *tls.Config
	// MaxLayerBytes bounds the artifact's layer as stored (compressed). Default 64 MiB.
	MaxLayerBytes int64
	// Unpack bounds the layer's content: files, total and per-file bytes (uncompressed).
	// Zero fields take artifact.DefaultLimits (10,000 files, 256 MiB, 64 MiB a file).
	Unpack artifact.Limits
	// MaxTags bounds the tags read for a semver range. Default 10,000.
	MaxTags int
	// MaxSemverCandidates bounds how many versions satisfying a range, newest first, are
	// checked for a signature before giving up. Default 10.
	MaxSemverCandidates int
	Logger              *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxLayerBytes       = 64 << 20
	DefaultMaxTags             = 10_000
	DefaultMaxSemverCandidates = 10
)

// Fetcher fetches OCI artifact sources (source.Fetcher for Source.spec.oci).
type Fetcher struct {
	opts Options

	mu sync.Mutex
	// last is, by source, what the last Fetch delivered, so that an unchanged revision is
	// answered without a download only when it is the same artifact at the same place,
	// verified with the same keys.
	last map[string]delivered
}

type delivered struct{ url, revision, keys string }

// New returns a Fetcher.
func New(opts Options) (*Fetcher, error) {
	if opts.MaxLayerBytes <= 0 {
		opts.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if opts.MaxTags <= 0 {
		opts.MaxTags = DefaultMaxTags
	}
	if opts.MaxSemverCandidates <= 0 {
		opts.MaxSemverCandidates = DefaultMaxSemverCandidates
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if opts.TLSConfig != nil {
			t.TLSClientConfig = opts.TLSConfig.Clone()
		}
		opts.Transport = t
	}
	for n, k := range opts.Keys {
		if k.Name != n || k.public == nil {
			return nil, fmt.Errorf("key '%s': not loaded with LoadKey or ParseKey", n)
		}
	}
	return &Fetcher{opts: opts, last: map[string]delivered{}}, nil
}

var _ source.Fetcher = (*Fetcher)(nil)

// target is a source resolved to what is fetched.
type target struct {
	src      string // the source's name, for errors
	url      string // oci://..., credentials removed
	repo     name.Repository
	opts     []remote.Option
	keys     []Key  // empty: no verification
	keysID   string // the keys' names and fingerprints, to tell a change of keys
	insecure bool
}

// Fetch resolves the source's tag, semver range or digest to a manifest digest, verifies its
// cosign signature when the source asks for one, and unpacks the artifact's one layer into
// dst.
func (f *Fetcher) Fetch(ctx context.Context, s v1alpha1.Source, prev string, dst string) (source.Fetched, error) {
	t, err := f.target(s)
	if err != nil {
		return source.Fetched{}, err
	}
	o := s.Spec.OCI
	var cands []candidate
	switch {
	case o.Digest != "":
		d, err := v1.NewHash(o.Digest)
		if err != nil {
			return source.Fetched{}, t.errorf("digest %q: %v", o.Digest, err)
		}
		cands = []candidate{{revision: d.String(), digest: d}}
	case o.Semver != "":
		cands, err = f.semverCandidates(ctx, t, o.Semver)
		if err != nil {
			return source.Fetched{}, err
		}
	default:
		tag := o.Tag
		if tag == "" {
			tag = "latest"
		}
		c, err := resolveTag(ctx, t, tag)
		if err != nil {
			return source.Fetched{}, err
		}
		cands = []candidate{c}
	}

	var refused []string
	for _, c := range cands {
		if c.revision == "" {
			if c, err = resolveTag(ctx, t, c.tag); err != nil {
				return source.Fetched{}, err
			}
		}
		if c.revision == prev && f.unchanged(s.Metadata.Name, t, c.revision) {
			return source.Fetched{Revision: c.revision, URL: t.url, Unchanged: true}, nil
		}
		var signer Key
		if len(t.keys) > 0 {
			signer, err = verifySignature(ctx, t.repo, c.digest, t.keys, t.opts)
			var serr *SignatureError
			if errors.As(err, &serr) && o.Semver != "" {
				// A range: the newest satisfying version that is signed is the one.
				refused = append(refused, fmt.Sprintf("%s (%s)", c.tag, serr.Reason))
				f.opts.Logger.Warn("OCI source: version refused, trying an older one", "source", t.src, "tag", c.tag, "error", err)
				continue
			}
			if err != nil {
				return source.Fetched{}, t.errorf("%s: %v", c.revision, err)
			}
			if c.revision == prev && f.sameURL(s.Metadata.Name, t) {
				// Verified anew with the source's new keys: still nothing to download. (After a
				// restart nothing is remembered, and the artifact is fetched again: the
				// controller's previous URL is not known here.)
				f.remember(s.Metadata.Name, t, c.revision)
				return source.Fetched{Revision: c.revision, URL: t.url, Unchanged: true}, nil
			}
		}
		if err := f.download(ctx, t, c, dst); err != nil {
			return source.Fetched{}, err
		}
		f.remember(s.Metadata.Name, t, c.revision)
		out := source.Fetched{Revision: c.revision, URL: t.url}
		if len(t.keys) > 0 {
			out.Verified = map[string]string{"key": signer.Name, "fingerprint": signer.Fingerprint, "digest": c.digest.String()}
			if len(refused) > 0 {
				out.Verified["skipped"] = strings.Join(refused, "; ")
			}
		}
		return out, nil
	}
	if len(refused) > 0 {
		return source.Fetched{}, t.errorf("no version satisfying %s is signed by %s: %s", o.Semver, quoteList(keyNames(t.keys)), strings.Join(refused, "; "))
	}
	return source.Fetched{}, t.errorf("no candidate to fetch")
}

// unchanged reports whether the last delivery for this source was this revision, from the
// same URL, verified with the same keys.
func (f *Fetcher) unchanged(src string, t *target, revision string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.last[src]
	return ok && d == delivered{url: t.url, revision: revision, keys: t.keysID}
}

// sameURL reports whether the last delivery for this source came from the same URL, or
// whether nothing is known of it (a hub that restarted: the revision names the digest).
func (f *Fetcher) sameURL(src string, t *target) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.last[src]
	return ok && d.url == t.url
}

func (f *Fetcher) remember(src string, t *target, revision string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last[src] = delivered{url: t.url, revision: revision, keys: t.keysID}
}

// target checks the source against the operator's policy and keys and prepares the
// registry client.
func (f *Fetcher) target(s v1alpha1.Source) (*target, error) {
	o := s.Spec.OCI
	if o == nil {
		return nil, fmt.Errorf("source '%s': not an OCI source", s.Metadata.Name)
	}
	t := &target{src: s.Metadata.Name, url: source.Redact(o.URL), insecure: o.Insecure}
	ref, ok := strings.CutPrefix(o.URL, "oci://")
	if !ok {
		return nil, t.errorf("url %s: want oci://registry[:port]/repository", t.url)
	}
	nopts := []name.Option{name.StrictValidation}
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(ref, nopts...)
	if err != nil || !strings.Contains(ref, "/") {
		return nil, t.errorf("url %s: want oci://registry[:port]/repository (%v)", t.url, err)
	}
	t.repo = repo
	// The policy sees the registry as an https location: oci:// says nothing about the
	// transport, and plain HTTP is the guard's to refuse.
	u := &url.URL{Scheme: "https", Host: repo.RegistryStr(), Path: "/" + repo.RepositoryStr()}
	creds, err := f.opts.Policy.HTTPCredentials(s.Metadata.Name, o.Credentials, u, o.Insecure)
	if err != nil {
		return nil, err
	}
	g := &guard{base: f.opts.Transport, insecure: o.Insecure, registry: repo.RegistryStr()}
	auth := authn.Anonymous
	switch {
	case creds.Token != "":
		auth = &authn.Bearer{Token: creds.Token}
	case creds.Username != "":
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password}
	}
	if auth != authn.Anonymous {
		g.allowed = func(host string) error {
			_, err := f.opts.Policy.HTTPCredentials(s.Metadata.Name, o.Credentials, &url.URL{Scheme: "https", Host: host}, true)
			return err
		}
	}
	t.opts = []remote.Option{remote.WithTransport(g), remote.WithAuth(auth), remote.WithUserAgent("flotilla-hub")}

	if o.Verify != nil && o.Verify.Cosign != nil {
		names := o.Verify.Cosign.PublicKeys
		if len(names) == 0 {
			return nil, t.errorf("verify.cosign.publicKeys is empty: name at least one key the hub has")
		}
		var missing, ids []string
		for _, n := range names {
			k, ok := f.opts.Keys[n]
			if !ok {
				missing = append(missing, n)
				continue
			}
			t.keys = append(t.keys, k)
			ids = append(ids, k.Name+"="+k.Fingerprint)
		}
		if len(missing) > 0 {
			return nil, t.errorf("verify.cosign.publicKeys names %s, which the hub does not have (configured: %s; the operator adds one with flotilla hub --verify-key NAME=FILE)", quoteList(missing), configured(f.opts.Keys))
		}
		sort.Strings(ids)
		t.keysID = strings.Join(ids, ",")
	}
	return t, nil
}

func (t *target) errorf(format string, args ...any) error {
	return fmt.Errorf("source '%s': %s: %s", t.src, t.url, fmt.Sprintf(format, args...))
}

func configured(keys map[string]Key) string {
	if len(keys) == 0 {
		return "none"
	}
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	slices.Sort(names)
	return quoteList(names)
}

func keyNames(keys []Key) []string {
	n := make([]string, len(keys))
	for i, k := range keys {
		n[i] = k.Name
	}
	return n
}
