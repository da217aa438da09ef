package source

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// writePolicy writes a credentials config and its credentials files into a new directory and
// loads it, allowing file sources under fileDirs.
func writePolicy(t *testing.T, config string, files map[string]string, fileDirs ...string) *Policy {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	path := filepath.Join(dir, "credentials.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(path, fileDirs)
	if err != nil {
		t.Fatalf("LoadPolicy: %v", err)
	}
	return p
}

func TestPolicyNamedCredentials(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	srv := serveGit(t, filepath.Dir(r.dir), "deploy", "s3cret")
	url := srv.URL + "/repo" // http://127.0.0.1:port/repo
	pol := writePolicy(t, `
credentials:
  local:
    file: local.creds
    hosts: [127.0.0.1]
  github-ro:
    file: github.creds
    hosts: [github.com, "*.github.com"]
`, map[string]string{"local.creds": "username=deploy\npassword=s3cret\n", "github.creds": "token: ghp_secret\n"})
	p := NewPollerWithOptions(t.TempDir(), Options{Policy: pol})
	ctx := context.Background()

	t.Run("sent to a host it lists", func(t *testing.T) {
		got, err := p.Resolve(ctx, Git{Name: "apps", URL: url, Credentials: "local", Insecure: true})
		if err != nil || got.Commit != head {
			t.Fatalf("Resolve = %+v, %v; want commit %s", got, err, head)
		}
	})
	refusals := []struct {
		name string
		g    Git
		want string
	}{
		{"credential named for another host", Git{Name: "apps", URL: url, Credentials: "github-ro", Insecure: true},
			"source 'apps': credentials 'github-ro' may be sent to github.com, *.github.com only, not to 127.0.0.1:"},
		{"a look-alike host", Git{Name: "apps", URL: "https://github.com.evil.example/org/repo.git", Credentials: "github-ro"},
			"source 'apps': credentials 'github-ro' may be sent to github.com, *.github.com only, not to github.com.evil.example"},
		{"unknown name", Git{Name: "apps", URL: url, Credentials: "nope", Insecure: true},
			"source 'apps': credentials 'nope' are not in the hub's credentials configuration (--credentials-config)"},
		{"credentialsFile outside the allowed directories", Git{Name: "apps", URL: "https://github.com/o/r", CredentialsFile: "/etc/passwd"},
			"source 'apps': credentialsFile /etc/passwd is not under a directory the hub allows (allowCredentialsFiles in --credentials-config)"},
		{"plain http", Git{Name: "apps", URL: url, Credentials: "local"},
			"source 'apps': " + url + " is plain HTTP: use https://, or set insecure: true on the source to accept it"},
		{"file source not allowed", Git{Name: "apps", URL: "file://" + r.dir},
			"source 'apps': file://" + r.dir + " is a file source, and the hub allows none (its operator names the directories with --allow-file-sources)"},
	}
	asked := srv.lists.Load()
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Resolve(ctx, tt.g)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Resolve: %v\nwant an error starting %q", err, tt.want)
			}
			if err := p.Checkout(ctx, tt.g, head, filepath.Join(t.TempDir(), "out")); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Checkout: %v\nwant an error starting %q", err, tt.want)
			}
		})
	}
	if n := srv.lists.Load(); n != asked {
		t.Errorf("the server was asked %d more times; a refused source must not reach it", n-asked)
	}
}

func TestPolicyFileSources(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	allowed := filepath.Dir(r.dir)
	pol, err := LoadPolicy("", []string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPollerWithOptions(t.TempDir(), Options{Policy: pol})
	ctx := context.Background()
	for _, url := range []string{"file://" + r.dir, r.dir} {
		if got, err := p.Resolve(ctx, Git{Name: "s", URL: url}); err != nil || got.Commit != head {
			t.Fatalf("Resolve(%s) = %+v, %v", url, got, err)
		}
	}
	other := newRepo(t)
	other.commit("x", map[string]string{"b": "2"})
	for _, url := range []string{"file://" + other.dir, allowed + "/../" + filepath.Base(filepath.Dir(other.dir)) + "/repo"} {
		_, err := p.Resolve(ctx, Git{Name: "s", URL: url})
		want := "is not under a directory the hub allows for file sources (" + allowed + "; --allow-file-sources)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%s): %v; want %q", url, err, want)
		}
	}
	// The operator's own fleet URL is not bound by the directories.
	if _, err := p.Resolve(ctx, Git{Name: "fleet", URL: "file://" + other.dir, Operator: true}); err != nil {
		t.Errorf("operator's file URL: %v", err)
	}
}

func TestPolicyCredentialsFileAllowed(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"a": "1"})
	srv := serveGit(t, filepath.Dir(r.dir), "deploy", "s3cret")
	legacy := t.TempDir()
	writeFiles(t, legacy, map[string]string{"deploy.creds": "username=deploy\npassword=s3cret\n"})
	pol := writePolicy(t, "allowCredentialsFiles: ["+legacy+"]\n", nil)
	p := NewPollerWithOptions(t.TempDir(), Options{Policy: pol})
	got, err := p.Resolve(context.Background(), Git{Name: "apps", URL: srv.URL + "/repo", Insecure: true, CredentialsFile: filepath.Join(legacy, "deploy.creds")})
	if err != nil || got.Commit != head {
		t.Fatalf("Resolve = %+v, %v", got, err)
	}
	_, err = p.Resolve(context.Background(), Git{Name: "apps", URL: srv.URL + "/repo", Insecure: true, CredentialsFile: legacy + "/../x/deploy.creds"})
	if err == nil || !strings.Contains(err.Error(), "is not under a directory the hub allows") {
		t.Fatalf("credentialsFile with ..: %v", err)
	}
}

func TestLoadPolicyErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ok.creds": "token: x\n"})
	for _, tt := range []struct{ config, want string }{
		{"credentials:\n  a:\n    file: ok.creds\n", "credentials 'a': hosts must list the hosts it may be sent to"},
		{"credentials:\n  a:\n    hosts: [x]\n", "credentials 'a': file must be set"},
		{"credentials:\n  a:\n    file: missing.creds\n    hosts: [x]\n", "credentials 'a': credentials " + dir + "/missing.creds: open"},
		{"credentials:\n  a:\n    file: ok.creds\n    hosts: [https://x]\n", `host "https://x": want a host name, host:port or *.domain`},
		{"credential:\n  a: {}\n", "field credential not found"},
	} {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPolicy(path, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadPolicy(%q): %v; want %q", tt.config, err, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"https://deploy:s3cret@git.example.com/r.git", "https://deploy:xxxxx@git.example.com/r.git"},
		{"https://ghp_token123@github.com/o/r.git", "https://xxxxx@github.com/o/r.git"},
		{"ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"},
		{"https://github.com/o/r.git", "https://github.com/o/r.git"},
		{"https://u:p%zz@host/r", "https://xxxxx@host/r"},
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// An HTTP error from go-git quotes the URL it requested, hiding a password but not a token
// given as the user name: neither may reach the message.
func TestFetchErrorRedactsURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusTeapot)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://pl4nted-t0ken@", 1) + "/repo"
	_, err := NewPoller(t.TempDir()).Resolve(context.Background(), Git{Name: "apps", URL: url})
	if err == nil || strings.Contains(err.Error(), "pl4nted-t0ken") {
		t.Fatalf("Resolve: %v; want an error without the token", err)
	}
	if !strings.Contains(err.Error(), "http://xxxxx@") {
		t.Errorf("error does not name the redacted URL: %v", err)
	}
	var re *redactedError
	if errors.As(err, &re) && errors.Unwrap(re) == nil {
		t.Errorf("redacted error lost its cause")
	}
}

// A source without credentials on the URL of one with them gets its own mirror: it cannot
// check out what the other fetched.
func TestMirrorPerCredentials(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := r.commit("first", map[string]string{"secret.txt": "private"})
	srv := serveGit(t, filepath.Dir(r.dir), "deploy", "s3cret")
	pol := writePolicy(t, "credentials:\n  local: {file: local.creds, hosts: [127.0.0.1]}\n", map[string]string{"local.creds": "username=deploy\npassword=s3cret\n"})
	p := NewPollerWithOptions(t.TempDir(), Options{Policy: pol, MaxAge: time.Hour})
	ctx := context.Background()
	private := Git{Name: "platform", URL: srv.URL + "/repo", Insecure: true, Credentials: "local"}
	if got, err := p.Resolve(ctx, private); err != nil || got.Commit != head {
		t.Fatalf("Resolve with credentials = %+v, %v", got, err)
	}
	anonymous := Git{Name: "team", URL: srv.URL + "/repo", Insecure: true}
	err := p.Checkout(ctx, anonymous, head, filepath.Join(t.TempDir(), "out"))
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("Checkout without credentials: %v; want authentication required, not the other source's mirror", err)
	}
	if _, err := p.Resolve(ctx, anonymous); !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("Resolve without credentials: %v; want authentication required", err)
	}
}
