package source

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Fetcher resolves a source that is not Git (a Helm chart, an OCI artifact) and writes its
// content to a directory, for the hub to pack as the source's artifact.
type Fetcher interface {
	// Fetch resolves s. When the resolved revision equals prev (the revision of the
	// source's last artifact, "" if none) it returns with Unchanged set and writes nothing;
	// otherwise it writes the content into dst, an empty directory. An error leaves the last
	// artifact in force: it names the source and says what failed.
	Fetch(ctx context.Context, s v1alpha1.Source, prev string, dst string) (Fetched, error)
}

// Fetched is what a Fetcher resolved.
type Fetched struct {
	// Revision identifies the content: "6.5.4@sha256:<hex>" for a chart (version and chart
	// archive digest), "v1.2.0@sha256:<hex>" for an OCI artifact (tag and manifest digest).
	Revision string
	// URL is the source's location with any credentials removed.
	URL string
	// Unchanged: Revision equals prev and dst was left empty.
	Unchanged bool
	// Verified is set when a signature was checked: what the audit trail records with the
	// revision (for cosign: the key's name and fingerprint).
	Verified map[string]string
}

// HTTPCredentials checks a named credential (or none) for an http(s) location of a Helm or OCI
// source: http:// only with insecure, a named credential only to the hosts listed for it. It
// returns the credential's content (token or username and password), zero for none. source
// names the source in errors.
func (p *Policy) HTTPCredentials(sourceName, name string, u *url.URL, insecure bool) (Credentials, error) {
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("source '%s': "+format, append([]any{sourceName}, args...)...)
	}
	if u.Scheme == "http" && !insecure {
		return Credentials{}, errorf("%s is plain HTTP: use https://, or set insecure: true on the source to accept it", redact(u.String()))
	}
	if name == "" {
		return Credentials{}, nil
	}
	if p == nil {
		return Credentials{}, errorf("credentials need the hub's credentials configuration")
	}
	c, ok := p.Credentials[name]
	if !ok {
		return Credentials{}, errorf("credentials '%s' are not in the hub's credentials configuration (--credentials-config)", name)
	}
	ep := &transport.Endpoint{Protocol: u.Scheme, Host: u.Hostname()}
	if port := u.Port(); port != "" {
		if _, err := fmt.Sscan(port, &ep.Port); err != nil {
			return Credentials{}, errorf("port of %s: %v", redact(u.String()), err)
		}
	}
	if !hostAllowed(ep, c.Hosts) {
		return Credentials{}, errorf("credentials '%s' may be sent to %s only, not to %s", name, strings.Join(c.Hosts, ", "), hostOf(ep))
	}
	creds, err := LoadCredentials(c.File)
	if err != nil {
		return Credentials{}, errorf("credentials '%s': %w", name, err)
	}
	if len(creds.SSHPrivateKey) > 0 {
		return Credentials{}, errorf("credentials '%s' hold an ssh key, which %s cannot use (want a token or username and password)", name, hostOf(ep))
	}
	return creds, nil
}
