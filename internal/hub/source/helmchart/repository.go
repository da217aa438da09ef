package helmchart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/flotilla/flotilla/internal/hub/source"
)

// repository is where a chart comes from: a chart repository or an OCI registry.
type repository interface {
	// resolve picks the newest version of chart satisfying constraint.
	resolve(ctx context.Context, chart, constraint string) (chartRef, error)
	// download returns the chart's archive, checked against the digest the repository
	// states for it.
	download(ctx context.Context, ref chartRef) ([]byte, error)
}

// chartRef is a chart version a repository offers.
type chartRef struct {
	name, version string
	// digest is the archive's sha256 in hex, when the repository states it before the
	// download ("" otherwise).
	digest string
	// location is the archive's URL (chart repositories) or the registry reference of the
	// manifest (OCI), credentials removed.
	location string
	// size is the archive's size when known before the download (OCI), else 0.
	size int64
}

// openRepository prepares access to the repository at raw. The source's named credentials are
// checked against the operator's policy; for a dependency's repository (dependency set) a
// credential that may not go to its host is left out rather than refused.
func (j *fetchJob) openRepository(ctx context.Context, raw, credName string, primary bool) (repository, error) {
	fail := func(err error) error {
		msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("source '%s': ", j.source))
		if primary {
			return j.errorf("%s", msg)
		}
		return j.errorf("dependency repository %s: %s", source.Redact(raw), msg)
	}
	u, err := parseRepository(raw)
	if err != nil {
		return nil, fail(err)
	}
	if u.User != nil {
		return nil, fail(fmt.Errorf("the repository URL holds credentials: name credentials the hub's operator configured (credentials:) instead"))
	}
	// The policy judges the host a registry is reached at: over https, or http when insecure.
	hu := *u
	if hu.Scheme == "oci" {
		hu.Scheme = "https"
	}
	policy := j.f.opts.Policy
	creds, err := policy.HTTPCredentials(j.source, credName, &hu, j.insecure)
	if err != nil && !primary && credName != "" {
		// A dependency elsewhere is fetched anonymously, as Helm does not pass a
		// repository's credentials to another one.
		credName = ""
		creds, err = policy.HTTPCredentials(j.source, "", &hu, j.insecure)
	}
	if err != nil {
		return nil, fail(err)
	}
	limit := max(j.f.opts.MaxIndexBytes, j.f.opts.MaxChartBytes) + 1<<20
	g := &guard{base: j.f.base, origin: &hu, creds: creds, limit: limit, insecure: j.insecure}
	if u.Scheme == "oci" {
		// The registry client sends the credentials, to the registry and to its token
		// service; the guard keeps them from a token service on a host they may not go to.
		g.allow = func(target *url.URL) bool {
			if credName == "" {
				return false
			}
			_, err := policy.HTTPCredentials(j.source, credName, target, j.insecure)
			return err == nil
		}
		return j.newOCIRepository(u, g, creds)
	}
	g.add = true
	base := *u
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	base.RawQuery, base.Fragment = "", ""
	return &httpRepository{
		j: j, base: &base, credName: credName,
		client: &http.Client{Transport: g, Timeout: j.f.opts.RequestTimeout, CheckRedirect: checkRedirect},
	}, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// checkHexDigest accepts a sha256 digest, with or without its "sha256:" prefix, and returns
// its hex.
func checkHexDigest(d string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(d, "sha256:"))
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q is not a sha256 digest", d)
	}
	return h, nil
}
