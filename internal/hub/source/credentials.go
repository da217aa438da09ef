package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
)

// Credentials authenticate the Poller to a Git server. The zero value means
// anonymous access (and, for ssh URLs, go-git's defaults: the ssh agent and
// the user's known_hosts). At most one method is set; LoadCredentials
// enforces it. The file format is described in the package documentation.
type Credentials struct {
	// Token is sent as an HTTP bearer token.
	Token string
	// Username and Password are sent as HTTP basic auth.
	Username string
	Password string
	// SSHPrivateKey is a PEM-encoded private key, unencrypted.
	SSHPrivateKey []byte
	// SSHKnownHosts is known_hosts content to check the server's host key
	// against; empty means the user's known_hosts files.
	SSHKnownHosts []byte
	// SSHUser is the ssh user when the URL names none; empty means "git".
	SSHUser string
}

// IsZero reports whether c holds no credentials.
func (c Credentials) IsZero() bool {
	return c.Token == "" && c.Username == "" && c.Password == "" && len(c.SSHPrivateKey) == 0
}

// String describes the method without revealing any secret, so that
// Credentials can be logged or printed by mistake without harm.
func (c Credentials) String() string {
	switch {
	case c.Token != "":
		return "token(redacted)"
	case c.Username != "":
		return fmt.Sprintf("basic(%s:redacted)", c.Username)
	case len(c.SSHPrivateKey) > 0:
		return "ssh-key(redacted)"
	}
	return "anonymous"
}

// GoString is String, so that %#v does not print secrets either.
func (c Credentials) GoString() string { return c.String() }

// credentialKeys are the keys a credentials file may hold.
const credentialKeys = "token, username, password, sshPrivateKey, sshKnownHosts, sshUser"

// LoadCredentials reads a credentials file. Relative key paths inside it are
// relative to the file's directory.
func LoadCredentials(path string) (Credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	c, err := ParseCredentials(data, filepath.Dir(path))
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials %s: %w", path, err)
	}
	return c, nil
}

// ParseCredentials parses the content of a credentials file; baseDir
// resolves relative paths to key files.
func ParseCredentials(data []byte, baseDir string) (Credentials, error) {
	var kv map[string]string
	var err error
	if isKeyValue(data) {
		kv, err = parseKeyValue(data)
	} else {
		kv, err = parseYAML(data)
	}
	if err != nil {
		return Credentials{}, err
	}
	for k := range kv {
		if !slices.Contains(strings.Split(credentialKeys, ", "), k) {
			return Credentials{}, fmt.Errorf("unknown key %q (want one of %s)", k, credentialKeys)
		}
	}

	c := Credentials{
		Token:    kv["token"],
		Username: kv["username"],
		Password: kv["password"],
		SSHUser:  kv["sshUser"],
	}
	if v := kv["sshPrivateKey"]; v != "" {
		if c.SSHPrivateKey, err = inlineOrFile(v, baseDir, isPEM); err != nil {
			return Credentials{}, fmt.Errorf("sshPrivateKey: %w", err)
		}
		if _, err := ssh.ParsePrivateKey(c.SSHPrivateKey); err != nil {
			return Credentials{}, fmt.Errorf("sshPrivateKey: %w", err)
		}
	}
	if v := kv["sshKnownHosts"]; v != "" {
		// A known_hosts line always has spaces; a path, in practice, none.
		inline := func(s string) bool { return strings.ContainsAny(s, " \t\n") }
		if c.SSHKnownHosts, err = inlineOrFile(v, baseDir, inline); err != nil {
			return Credentials{}, fmt.Errorf("sshKnownHosts: %w", err)
		}
	}

	methods := 0
	for _, set := range []bool{c.Token != "", c.Username != "" || c.Password != "", len(c.SSHPrivateKey) > 0} {
		if set {
			methods++
		}
	}
	switch {
	case methods == 0:
		return Credentials{}, errors.New("no credentials: set token, username and password, or sshPrivateKey")
	case methods > 1:
		return Credentials{}, errors.New("more than one method: set only one of token, username/password, sshPrivateKey")
	case (c.Username == "") != (c.Password == ""):
		return Credentials{}, errors.New("username and password go together")
	case (c.SSHUser != "" || len(c.SSHKnownHosts) > 0) && len(c.SSHPrivateKey) == 0:
		return Credentials{}, errors.New("sshUser and sshKnownHosts need sshPrivateKey")
	}
	return c, nil
}

// isKeyValue tells the key=value format from YAML by the first line that
// says anything: "key=value" has its '=' before any ':'.
func isKeyValue(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || line == "---" {
			continue
		}
		eq, colon := strings.Index(line, "="), strings.Index(line, ":")
		return eq >= 0 && (colon < 0 || eq < colon)
	}
	return false
}

func parseKeyValue(data []byte) (map[string]string, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want key=value", n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("line %d: %s set twice", n, k)
		}
		kv[k] = v
	}
	return kv, sc.Err()
}

func parseYAML(data []byte) (map[string]string, error) {
	kv := map[string]string{}
	if err := yaml.Unmarshal(data, &kv); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	return kv, nil
}

func isPEM(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "-----BEGIN ") }

// inlineOrFile returns v itself when isInline says it is content, else the
// content of the file it names.
func inlineOrFile(v, baseDir string, isInline func(string) bool) ([]byte, error) {
	if isInline(v) {
		return []byte(v), nil
	}
	if !filepath.IsAbs(v) && baseDir != "" {
		v = filepath.Join(baseDir, v)
	}
	return os.ReadFile(v)
}

// authMethod returns the go-git auth method for these credentials against
// ep; nil means anonymous. timeout bounds the ssh connection, which go-git
// does not tie to the fetch's context.
func (c Credentials) authMethod(ep *transport.Endpoint, timeout time.Duration) (transport.AuthMethod, error) {
	if c.IsZero() || ep.Protocol == "file" {
		// A local repository is read with the hub's own permissions.
		return nil, nil
	}
	web := ep.Protocol == "http" || ep.Protocol == "https"
	switch {
	case c.Token != "":
		if !web {
			return nil, fmt.Errorf("token credentials need an http(s) URL, not %s", ep.Protocol)
		}
		return &githttp.TokenAuth{Token: c.Token}, nil
	case c.Username != "":
		if !web {
			return nil, fmt.Errorf("username/password credentials need an http(s) URL, not %s", ep.Protocol)
		}
		return &githttp.BasicAuth{Username: c.Username, Password: c.Password}, nil
	}
	if ep.Protocol != "ssh" {
		return nil, fmt.Errorf("ssh key credentials need an ssh URL, not %s", ep.Protocol)
	}
	user := ep.User
	if user == "" {
		user = c.SSHUser
	}
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeys(user, c.SSHPrivateKey, "")
	if err != nil {
		return nil, fmt.Errorf("ssh private key: %w", err)
	}
	if len(c.SSHKnownHosts) > 0 {
		cb, err := knownHostsCallback(c.SSHKnownHosts)
		if err != nil {
			return nil, err
		}
		keys.HostKeyCallback = cb
	}
	return &sshKeyAuth{PublicKeys: keys, timeout: timeout}, nil
}

// knownHostsCallback checks host keys against known_hosts content. The
// parser only reads files, so the content goes through a temporary one.
func knownHostsCallback(content []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "flotilla-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("ssh known hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("ssh known hosts: %w", werr)
	}
	cb, err := gitssh.NewKnownHostsCallback(f.Name())
	if err != nil {
		return nil, fmt.Errorf("ssh known hosts: %w", err)
	}
	return cb, nil
}

// sshKeyAuth adds a dial timeout to go-git's public key auth: go-git dials
// ssh with its own context, so without one an unreachable host would hold a
// fetch past its caller's deadline.
type sshKeyAuth struct {
	*gitssh.PublicKeys
	timeout time.Duration
}

func (a *sshKeyAuth) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := a.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = a.timeout
	return cfg, nil
}
