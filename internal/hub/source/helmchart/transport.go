package helmchart

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/flotilla/flotilla/internal/hub/source"
)

// guard is the transport every request of a fetch goes through. It adds the credentials to
// requests for the repository's own host (add), removes any Authorization header from
// requests for a host the credentials may not go to (an archive elsewhere, a redirect, a
// registry's token service on another host), and bounds every response body.
type guard struct {
	base http.RoundTripper
	// origin is the repository's URL; credentials go to its host and port.
	origin *url.URL
	creds  source.Credentials
	// add: the guard sets the credentials itself (chart repositories); for registries the
	// registry client does, and the guard only removes them where they may not go.
	add bool
	// allow reports whether credentials may go to another host (a registry's token service
	// on a host the named credentials list).
	allow func(u *url.URL) bool
	// limit bounds each response body.
	limit int64
	// insecure allows plain HTTP. Without it every http:// request is refused: the registry
	// client tries plain HTTP by itself for loopback and private addresses, and a redirect
	// could lead there.
	insecure bool
}

// errPlainHTTP is a plain-HTTP request of a source that does not allow it.
var errPlainHTTP = errors.New("plain HTTP refused: set insecure: true on the source to accept it")

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure {
		return nil, fmt.Errorf("%s: %w", req.URL.Redacted(), errPlainHTTP)
	}
	r := req
	switch {
	case sameHost(req.URL, g.origin):
		if g.add && !g.creds.IsZero() && req.Header.Get("Authorization") == "" {
			r = req.Clone(req.Context())
			if g.creds.Token != "" {
				r.Header.Set("Authorization", "Bearer "+g.creds.Token)
			} else {
				r.SetBasicAuth(g.creds.Username, g.creds.Password)
			}
		}
	case req.Header.Get("Authorization") != "" && (g.allow == nil || !g.allow(req.URL)):
		r = req.Clone(req.Context())
		r.Header.Del("Authorization")
	}
	resp, err := g.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: g.limit, limit: g.limit}
	return resp, nil
}

// errTooLarge is a response body over the guard's limit.
var errTooLarge = errors.New("response body too large")

type limitedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a larger one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: over %d bytes", errTooLarge, b.limit)
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// sameHost reports whether u is on origin's host and port: the port as written, or, when
// origin names none, the default port of u's scheme (an oci:// registry is served over https,
// or http when insecure).
func sameHost(u, origin *url.URL) bool {
	if !strings.EqualFold(u.Hostname(), origin.Hostname()) {
		return false
	}
	if origin.Port() != "" {
		return effectivePort(u) == origin.Port()
	}
	return u.Port() == "" || u.Port() == defaultPort(u.Scheme)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return defaultPort(u.Scheme)
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// checkRedirect refuses a redirect from https to plain http (it would send the request, and
// what the server answers, in the clear) and long chains.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
		return fmt.Errorf("redirect from https to %s refused", req.URL.Redacted())
	}
	return nil
}
