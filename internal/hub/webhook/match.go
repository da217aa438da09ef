package webhook

import (
	"net/url"
	"path"
	"strings"
)

// Key is the repository a URL names, in a form that compares: host and path, lower case,
// without credentials, a default port, a trailing "/" or ".git". The scheme is left out, so
// that a repository's HTTPS, SSH (ssh:// or scp-like git@host:path) and web URLs share one
// key. Case is folded in the path too: GitHub and GitLab ignore it, and on a server that does
// not, a false match costs one needless poll, never a missed one.
func Key(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	var host, p string
	switch {
	case strings.HasPrefix(raw, "/"):
		p = path.Clean(raw)
	case strings.Contains(raw, "://"):
		u, err := url.Parse(raw)
		if err != nil {
			return strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git"))
		}
		host, p = u.Host, u.Path
		if u.Scheme == "file" {
			p = path.Clean(p)
		}
		if h, port, ok := strings.Cut(host, ":"); ok && !strings.Contains(port, ":") {
			if defaultPorts[strings.ToLower(u.Scheme)] == port {
				host = h
			}
		}
	default: // scp-like: [user@]host:path
		at := strings.LastIndex(raw, "@")
		rest := raw[at+1:]
		h, pth, ok := strings.Cut(rest, ":")
		if !ok {
			return strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git"))
		}
		host, p = h, "/"+strings.TrimPrefix(pth, "/")
	}
	p = strings.TrimSuffix(strings.TrimRight(p, "/"), ".git")
	return strings.ToLower(host + p)
}

var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22", "git": "9418"}

// SameRepository reports whether any of urls names the repository of source.
func SameRepository(source string, urls ...string) bool {
	k := Key(source)
	if k == "" {
		return false
	}
	for _, u := range urls {
		if Key(u) == k {
			return true
		}
	}
	return false
}

// Ref is the ref an event moved, as the controller's PollNow takes it: "refs/heads/BRANCH",
// "refs/tags/TAG", or "" when the event names none (every source of the repository).
func (ev Event) Ref() string {
	switch {
	case ev.Branch != "":
		return "refs/heads/" + ev.Branch
	case ev.Tag != "":
		return "refs/tags/" + ev.Tag
	}
	return ""
}

// Follows reports whether a Git source that follows branch, tag, semver or commit (as its
// spec.git says) may have moved when ref moved:
//   - a source pinned to a commit never moves;
//   - ref "" (the generic provider without a branch): every other source of the repository;
//   - a branch push: the sources of that branch, and those that name no branch, tag, semver
//     or commit (they follow the remote's HEAD, and the hub does not know which branch HEAD
//     is: an extra poll of an unchanged HEAD resolves one ref and packs nothing);
//   - a tag push: the sources of that tag and every semver source (a new tag may be the
//     highest in range).
func Follows(ref, branch, tag, semver, commit string) bool {
	if commit != "" {
		return false
	}
	if ref == "" {
		return true
	}
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return b == branch || (branch == "" && tag == "" && semver == "")
	}
	if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		return t == tag || semver != ""
	}
	return false
}
