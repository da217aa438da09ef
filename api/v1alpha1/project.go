package v1alpha1

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// KindProject is the kind of a Project object.
const KindProject = "Project"

// ProjectOrDefault is the project the release belongs to: Project, or ProjectPlatform when
// unset.
func (s ReleaseSpec) ProjectOrDefault() string { return ProjectOrPlatform(s.Project) }

// ProjectOrPlatform is the project a name stands for: "" (a release, an assignment or a grant
// that names none) is the built-in platform project.
func ProjectOrPlatform(name string) string {
	if name == "" {
		return ProjectPlatform
	}
	return name
}

// AllowsSource reports whether the project's releases may use the source named name, whose
// Git URL is url: some entry of Sources names it ("*" globs allowed) or, for an entry with
// "://", matches its URL (see [MatchURL]).
func (s ProjectSpec) AllowsSource(name, url string) bool {
	for _, p := range s.Sources {
		if isURLPattern(p) {
			if url != "" && MatchURL(p, url) {
				return true
			}
		} else if Glob(p, name) {
			return true
		}
	}
	return false
}

// AllowsSourceURL reports whether some URL pattern of Sources matches url: the test for a
// Source that a tenant's own fleet repository defines, whose name the tenant chose.
func (s ProjectSpec) AllowsSourceURL(url string) bool {
	for _, p := range s.Sources {
		if isURLPattern(p) && MatchURL(p, url) {
			return true
		}
	}
	return false
}

// AllowsNamespace reports whether some entry of Namespaces matches ns.
func (s ProjectSpec) AllowsNamespace(ns string) bool {
	for _, p := range s.Namespaces {
		if Glob(p, ns) {
			return true
		}
	}
	return false
}

func isURLPattern(p string) bool { return strings.Contains(p, "://") }

// Glob reports whether s matches pattern, where "*" matches any run of characters (the empty
// one too) and every other character itself. Namespace and source name patterns use it.
func Glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// MatchURL reports whether a Git URL matches a URL pattern. In the pattern "*" matches any
// run of characters but "/", so that "https://*.example.com/team-a/*" can match neither
// another host nor a repository below another team's path, and "**" matches any run at all
// ("https://git.example.com/team-a/**" takes subgroups too). The URL is compared in its
// normal form (see [NormalURL]); one that has none (a query, a fragment, a ".." segment)
// matches no pattern.
func MatchURL(pattern, rawURL string) bool {
	u, ok := NormalURL(rawURL)
	if !ok {
		return false
	}
	return urlPattern(pattern).MatchString(u)
}

func urlPattern(pattern string) *regexp.Regexp {
	scheme, rest, _ := strings.Cut(pattern, "://")
	host, p, _ := strings.Cut(rest, "/")
	pattern = strings.ToLower(scheme) + "://" + strings.ToLower(host)
	if p != "" {
		pattern += "/" + p
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); {
		switch {
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i += 2
		case pattern[i] == '*':
			b.WriteString("[^/]*")
			i++
		default:
			j := i
			for j < len(pattern) && pattern[j] != '*' {
				j++
			}
			b.WriteString(regexp.QuoteMeta(pattern[i:j]))
			i = j
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// NormalURL is the form of a Git URL that project patterns match: scheme and host in lower
// case, no credentials, port kept, the path cleaned. A plain path is a file:// URL and
// "git@host:org/repo.git" an ssh:// one. ok is false for a URL that could mean something
// other than it seems to a pattern: one with a query, a fragment or a ".." segment.
func NormalURL(raw string) (string, bool) {
	switch {
	case strings.HasPrefix(raw, "/"):
		raw = "file://" + raw
	case !strings.Contains(raw, "://"):
		// scp-like: [user@]host:path
		hostPart, p, ok := strings.Cut(raw, ":")
		if !ok {
			return "", false
		}
		if i := strings.LastIndex(hostPart, "@"); i >= 0 {
			hostPart = hostPart[i+1:]
		}
		raw = "ssh://" + hostPart + "/" + strings.TrimPrefix(p, "/")
	}
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.Contains(raw, "?") || strings.Contains(raw, "#") {
		return "", false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == ".." || seg == "." {
			return "", false
		}
	}
	p := u.Path
	if p != "" {
		p = path.Clean(p)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p, true
}
