package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"go.yaml.in/yaml/v3"
)

// Policy is what the hub's operator lets fleet sources use: named credentials and the hosts
// each may be sent to, the directories credentialsFile may name, and the directories file://
// sources may read. A fleet commit is written by whoever may push to the fleet repository;
// the policy is what keeps such a commit from sending a credential to a host of its choosing
// or reading any file on the hub.
type Policy struct {
	// Credentials are the credentials sources may name, by name.
	Credentials map[string]NamedCredentials
	// CredentialsFileDirs are the directories under which a source's credentialsFile may
	// lie. Empty: credentialsFile is refused.
	CredentialsFileDirs []string
	// FileDirs are the directories under which file:// sources (and plain paths) may lie.
	// Empty: file sources are refused.
	FileDirs []string
}

// NamedCredentials is one entry of the credentials configuration.
type NamedCredentials struct {
	// File is the credentials file (see the package documentation for its format). It is
	// read at every poll, so it can be rotated in place.
	File string `yaml:"file"`
	// Hosts are the hosts the credentials may be sent to: "github.com", "git.example.com:8443"
	// (that port only) or "*.example.com" (any subdomain). At least one.
	Hosts []string `yaml:"hosts"`
}

// credentialsConfig is the file --credentials-config names.
type credentialsConfig struct {
	Credentials           map[string]NamedCredentials `yaml:"credentials"`
	AllowCredentialsFiles []string                    `yaml:"allowCredentialsFiles"`
}

// LoadPolicy reads the operator's credentials configuration:
//
//	credentials:
//	  github-ro:
//	    file: github-ro.creds        # relative to this file
//	    hosts: [github.com]
//	allowCredentialsFiles:           # where a source's credentialsFile may lie (default: nowhere)
//	  - /etc/flotilla/legacy-credentials
//
// Every named file must exist and parse, so that a mistake shows at start, not at the first
// poll. path "" is an empty policy. fileDirs become the policy's FileDirs.
func LoadPolicy(path string, fileDirs []string) (*Policy, error) {
	p := &Policy{Credentials: map[string]NamedCredentials{}}
	for _, d := range fileDirs {
		abs, err := absDir(d)
		if err != nil {
			return nil, fmt.Errorf("file source directory %q: %w", d, err)
		}
		p.FileDirs = append(p.FileDirs, abs)
	}
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials config %s: %w", path, err)
	}
	var cfg credentialsConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("credentials config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	for name, c := range cfg.Credentials {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("credentials config %s: credentials '%s': %s", path, name, fmt.Sprintf(format, args...))
		}
		if c.File == "" {
			return nil, fail("file must be set")
		}
		if len(c.Hosts) == 0 {
			return nil, fail("hosts must list the hosts it may be sent to")
		}
		for i, h := range c.Hosts {
			c.Hosts[i] = strings.ToLower(h)
			if h == "" || strings.ContainsAny(h, "/@ ") {
				return nil, fail("host %q: want a host name, host:port or *.domain", h)
			}
		}
		if !filepath.IsAbs(c.File) {
			c.File = filepath.Join(base, c.File)
		}
		if _, err := LoadCredentials(c.File); err != nil {
			return nil, fail("%v", err)
		}
		p.Credentials[name] = c
	}
	for _, d := range cfg.AllowCredentialsFiles {
		abs, err := absDir(d)
		if err != nil {
			return nil, fmt.Errorf("credentials config %s: allowCredentialsFiles %q: %w", path, d, err)
		}
		p.CredentialsFileDirs = append(p.CredentialsFileDirs, abs)
	}
	return p, nil
}

func absDir(d string) (string, error) {
	if d == "" {
		return "", errors.New("empty")
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	return filepath.Clean(abs), nil
}

// under reports whether path lies in one of dirs (path is cleaned first, so "dir/../x" is
// not under dir).
func under(path string, dirs []string) bool {
	path = filepath.Clean(path)
	return slices.ContainsFunc(dirs, func(d string) bool {
		return path == d || strings.HasPrefix(path, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator))
	})
}

// authorize checks g against the policy and returns it with Auth set from the credentials it
// names. A nil policy allows every transport but resolves no credentials by name or file:
// it is for programs that trust every Git they are given; the hub always has one.
func (p *Policy) authorize(g Git, ep *transport.Endpoint) (Git, error) {
	if p == nil {
		if g.Credentials != "" || g.CredentialsFile != "" {
			return g, g.errorf("credentials need the hub's credentials configuration")
		}
		return g, nil
	}
	switch ep.Protocol {
	case "http":
		if !g.Insecure && !g.Operator {
			return g, g.errorf("%s is plain HTTP: use https://, or set insecure: true on the source to accept it", redact(g.URL))
		}
	case "file":
		if !g.Operator && !under(ep.Path, p.FileDirs) {
			if len(p.FileDirs) == 0 {
				return g, g.errorf("%s is a file source, and the hub allows none (its operator names the directories with --allow-file-sources)", redact(g.URL))
			}
			return g, g.errorf("%s is not under a directory the hub allows for file sources (%s; --allow-file-sources)", redact(g.URL), strings.Join(p.FileDirs, ", "))
		}
	}
	if g.Credentials != "" && g.CredentialsFile != "" {
		return g, g.errorf("set credentials or credentialsFile, not both")
	}
	switch {
	case g.Credentials != "":
		c, ok := p.Credentials[g.Credentials]
		if !ok {
			return g, g.errorf("credentials '%s' are not in the hub's credentials configuration (--credentials-config)", g.Credentials)
		}
		if !hostAllowed(ep, c.Hosts) {
			return g, g.errorf("credentials '%s' may be sent to %s only, not to %s", g.Credentials, strings.Join(c.Hosts, ", "), hostOf(ep))
		}
		creds, err := LoadCredentials(c.File)
		if err != nil {
			return g, g.errorf("credentials '%s': %w", g.Credentials, err)
		}
		g.Auth = creds
	case g.CredentialsFile != "":
		if !filepath.IsAbs(g.CredentialsFile) || !under(g.CredentialsFile, p.CredentialsFileDirs) {
			return g, g.errorf("credentialsFile %s is not under a directory the hub allows (allowCredentialsFiles in --credentials-config); name credentials the hub's operator configured with credentials: instead", g.CredentialsFile)
		}
		creds, err := LoadCredentials(g.CredentialsFile)
		if err != nil {
			return g, g.errorf("%w", err)
		}
		g.Auth = creds
	}
	return g, nil
}

// hostOf is the host (and port, if the URL names one) credentials would be sent to.
func hostOf(ep *transport.Endpoint) string {
	if ep.Protocol == "file" {
		return "a local path"
	}
	if ep.Port != 0 {
		return fmt.Sprintf("%s:%d", strings.ToLower(ep.Host), ep.Port)
	}
	return strings.ToLower(ep.Host)
}

// hostAllowed matches the endpoint's host against a credential's hosts: "host" (any port),
// "host:port" (that port) or "*.domain" (any subdomain, any port).
func hostAllowed(ep *transport.Endpoint, hosts []string) bool {
	if ep.Protocol == "file" || ep.Host == "" {
		return false
	}
	host := strings.ToLower(ep.Host)
	for _, h := range hosts {
		switch {
		case strings.HasPrefix(h, "*."):
			if strings.HasSuffix(host, h[1:]) {
				return true
			}
		case strings.Contains(h, ":"):
			if h == fmt.Sprintf("%s:%d", host, ep.Port) {
				return true
			}
		case h == host:
			return true
		}
	}
	return false
}

// HostAllowed matches the host of u against hosts written as a credential's hosts are:
// "host" (any port), "host:port" (that port; a URL without a port matches none) or
// "*.domain" (any subdomain, any port). The Helm fetcher judges a chart's dependency
// repositories with it, before contacting them.
func HostAllowed(u *url.URL, hosts []string) bool {
	port := 0
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		port = n
	}
	return hostAllowed(&transport.Endpoint{Protocol: u.Scheme, Host: u.Hostname(), Port: port}, hosts)
}
