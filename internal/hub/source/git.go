package source

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Git is a Git source: where the repository is and which revision to
// follow. At most one of Branch, Tag, Semver and Commit may be set; with
// none, the remote's default branch (its HEAD) is followed.
type Git struct {
	// Name identifies the source in errors.
	Name string
	// URL is https://, http://, ssh://, scp-like (git@host:org/repo),
	// file:// or an absolute path.
	URL string
	// Branch follows the head of that branch.
	Branch string
	// Tag pins that tag; annotated tags are peeled to their commit.
	Tag string
	// Semver follows the highest tag, with or without a leading "v", that
	// satisfies this range (Masterminds/semver syntax, e.g. "^1.2", ">=2.0 <3").
	Semver string
	// Commit pins a full 40-digit commit hash; it must exist in a branch or
	// tag of the remote.
	Commit string
	// Auth authenticates to the server; the zero value is anonymous. The Poller's Policy
	// sets it from Credentials or CredentialsFile.
	Auth Credentials
	// Credentials names credentials in the Poller's Policy (the operator's credentials
	// configuration); they are sent only to the hosts the policy lists for them.
	Credentials string
	// CredentialsFile names a credentials file on the hub; the Policy allows it only under
	// the directories its operator lists.
	CredentialsFile string
	// Insecure accepts an http:// URL, which the Policy refuses otherwise.
	Insecure bool
	// Operator marks a URL the hub's operator gave on the command line (the fleet
	// repository), not one read from the fleet: the Policy lets it use http:// and any
	// local path.
	Operator bool
}

// Resolved is the outcome of Resolve: a commit and what led to it.
type Resolved struct {
	// Revision names the commit and how it was chosen:
	// "<branch or tag>@sha1:<hex>" for a branch, tag, semver range or the
	// default branch, "sha1:<hex>" for a pinned commit.
	Revision string
	// Commit is the 40-digit hex commit hash.
	Commit string
	// Ref is the full reference resolved, e.g. "refs/heads/main" or
	// "refs/tags/v1.2.0"; empty for a pinned commit.
	Ref string
	// Author is "Name <email>" of the commit's author.
	Author string
	// Message is the commit message without trailing whitespace.
	Message string
	// Time is the commit's committer time.
	Time time.Time
}

// errorf formats an error about this source, starting with its name.
func (g Git) errorf(format string, args ...any) error {
	return fmt.Errorf("source '%s': "+format, append([]any{g.Name}, args...)...)
}

// validate checks what can be checked without the network and returns the
// parsed endpoint.
func (g Git) validate() (*transport.Endpoint, error) {
	if g.Name == "" {
		return nil, fmt.Errorf("source with URL %s: empty name", redact(g.URL))
	}
	set := 0
	for _, s := range []string{g.Branch, g.Tag, g.Semver, g.Commit} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return nil, g.errorf("set at most one of branch, tag, semver and commit")
	}
	if g.Commit != "" {
		if err := checkCommitHash(g.Commit); err != nil {
			return nil, g.errorf("commit %q: %w", g.Commit, err)
		}
	}
	ep, err := endpoint(g.URL)
	if err != nil {
		return nil, g.errorf("%w", err)
	}
	return ep, nil
}

func checkCommitHash(h string) error {
	if len(h) != 40 {
		return errors.New("want a full 40-digit hex hash")
	}
	if _, err := hex.DecodeString(h); err != nil {
		return errors.New("want a full 40-digit hex hash")
	}
	return nil
}

// endpoint parses a source URL, accepting only the documented forms.
func endpoint(raw string) (*transport.Endpoint, error) {
	if raw == "" {
		return nil, errors.New("empty URL")
	}
	if strings.HasPrefix(raw, "/") {
		raw = "file://" + raw
	}
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("URL %s: %w", redact(raw), err)
	}
	switch ep.Protocol {
	case "https", "http", "ssh":
	case "file":
		// go-git takes any other string for a path relative to the
		// working directory, which means nothing to a hub.
		if !strings.HasPrefix(raw, "file://") || !filepath.IsAbs(ep.Path) {
			return nil, fmt.Errorf("URL %s: want an absolute path", redact(raw))
		}
	default:
		return nil, fmt.Errorf("URL %s: want https://, http://, ssh://, file:// or an absolute path", redact(raw))
	}
	return ep, nil
}

// mirrorKey is what a mirror is keyed on: the URL (a plain path and its
// file:// form share one mirror) and the credentials named for it, so that a
// source without credentials never reads what another fetched with them.
func mirrorKey(ep *transport.Endpoint, g Git) string {
	key := g.URL
	if ep.Protocol == "file" {
		key = "file://" + filepath.Clean(ep.Path)
	}
	switch {
	case g.Credentials != "":
		key += "\x00credentials=" + g.Credentials
	case g.CredentialsFile != "":
		key += "\x00credentialsFile=" + g.CredentialsFile
	case !g.Auth.IsZero():
		key += "\x00auth=" + g.Auth.String()
	}
	return key
}

// Redact hides the secret in a URL with embedded credentials, for messages, logs, the
// store, the audit trail and what agents are sent: the password of user:password@, and for
// http(s) a lone user name too (https://<token>@host is how tokens are often embedded).
func Redact(raw string) string { return redact(raw) }

// SameRepository reports whether two source URLs name one repository: a plain path and its
// file:// form, a host in another case, a trailing slash or ".git", and credentials do not
// tell two repositories apart.
func SameRepository(a, b string) bool {
	na, nb := repositoryKey(a), repositoryKey(b)
	return na != "" && na == nb
}

func repositoryKey(raw string) string {
	if raw == "" {
		return ""
	}
	if strings.HasPrefix(raw, "/") {
		raw = "file://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := u.Path
	if u.Scheme == "file" {
		p = filepath.Clean(p)
	}
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git")
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
}

// redacted replaces a secret in a URL.
const redacted = "xxxxx"

// redact hides the secret of a URL with embedded credentials (see Redact).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// An unparsable URL may still hold "user:secret@": hide everything before the @.
		if scheme, rest, ok := strings.Cut(raw, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 && !strings.Contains(rest[:at], "/") {
				return scheme + "://" + redacted + "@" + rest[at+1:]
			}
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), redacted)
	} else if s := strings.ToLower(u.Scheme); s == "http" || s == "https" {
		u.User = url.User(redacted)
	} else {
		return raw // an ssh URL's git@ is a user name, not a secret
	}
	return u.String()
}

// redactError hides the URL's secret wherever err's text repeats it (go-git's HTTP errors
// quote the URL they requested), keeping err for errors.Is and errors.As.
func redactError(err error, raw string) error {
	u, perr := url.Parse(raw)
	if err == nil || perr != nil || u.User == nil {
		return err
	}
	msg := err.Error()
	secrets := []string{}
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
	} else if s := strings.ToLower(u.Scheme); s == "http" || s == "https" {
		name := u.User.Username()
		secrets = append(secrets, name, url.QueryEscape(name), url.PathEscape(name))
	}
	clean := msg
	for _, s := range secrets {
		if len(s) >= 3 {
			clean = strings.ReplaceAll(clean, s, redacted)
		}
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
