package ociartifact

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxMetadataBytes bounds a manifest or a page of tags read from a registry: real ones are a
// few kilobytes; go-containerregistry's own bound (100 MiB) is too much for a hostile one.
const maxMetadataBytes = 4 << 20

// guard is the transport under go-containerregistry's: what a registry, or a fleet commit
// naming one, cannot make the hub do.
//   - Plain HTTP only with insecure: go-containerregistry falls back to http:// on its own for
//     loopback and private addresses, which would let a registry there be read unencrypted.
//   - Credentials only to the hosts the operator listed for them: a registry answers the first
//     request with a token service of its choosing, and go-containerregistry sends the
//     credentials there.
//   - Manifests and tag lists of a bounded size.
type guard struct {
	base     http.RoundTripper
	insecure bool
	// registry is host[:port] of the source's registry; credentials may go there (the policy
	// allowed it before any request).
	registry string
	// allowed, when credentials are in use, says whether they may be sent to another host
	// (the registry's token service); nil: anonymous.
	allowed func(host string) error
}

var errPlainHTTP = errors.New("plain HTTP refused")

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure {
		return nil, fmt.Errorf("%w: %s answers only over http://? set insecure: true on the source to accept that", errPlainHTTP, req.URL.Host)
	}
	if g.allowed != nil && req.Header.Get("Authorization") != "" && !strings.EqualFold(req.URL.Host, g.registry) {
		if err := g.allowed(req.URL.Host); err != nil {
			return nil, fmt.Errorf("%s sent the hub to %s for a token: %w", g.registry, req.URL.Host, err)
		}
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if strings.Contains(req.URL.Path, "/manifests/") || strings.HasSuffix(req.URL.Path, "/tags/list") {
		resp.Body = &capBody{rc: resp.Body, left: maxMetadataBytes, what: req.URL.Path}
	}
	return resp, nil
}

// capBody fails a read past its bound instead of truncating silently.
type capBody struct {
	rc   io.ReadCloser
	left int64
	what string
}

func (c *capBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, fmt.Errorf("%s: response over %d bytes", c.what, maxMetadataBytes)
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("%s: response over %d bytes", c.what, maxMetadataBytes)
	}
	return n, err
}

func (c *capBody) Close() error { return c.rc.Close() }
