package source

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
)

// testSSHKey returns a new ed25519 private key in PEM and its public key in
// authorized_keys form.
func testSSHKey(t *testing.T) (private []byte, public string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
}

// sshCredentials returns key credentials that trust some key for hostPort,
// so that go-git gets as far as dialling.
func sshCredentials(t *testing.T, hostPort string) Credentials {
	t.Helper()
	key, pub := testSSHKey(t)
	host, port, _ := strings.Cut(hostPort, ":")
	return Credentials{SSHPrivateKey: key, SSHKnownHosts: []byte(fmt.Sprintf("[%s]:%s %s\n", host, port, pub))}
}

func TestLoadCredentials(t *testing.T) {
	t.Parallel()
	key, pub := testSSHKey(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte("github.com "+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	indentedKey := "    " + strings.ReplaceAll(strings.TrimSpace(string(key)), "\n", "\n    ")

	tests := []struct {
		name    string
		content string
		want    Credentials
		wantErr string
	}{
		{name: "token, YAML", content: "token: ghp_abc\n", want: Credentials{Token: "ghp_abc"}},
		{name: "token, key=value", content: "# deploy token\ntoken=ghp_abc\n", want: Credentials{Token: "ghp_abc"}},
		{name: "basic, YAML", content: "username: deploy\npassword: \"12345\"\n", want: Credentials{Username: "deploy", Password: "12345"}},
		{name: "basic, YAML number", content: "username: deploy\npassword: 12345\n", want: Credentials{Username: "deploy", Password: "12345"}},
		{name: "basic, key=value with ':' and '=' in the value", content: "username = deploy\npassword = 'a:b=c'\n", want: Credentials{Username: "deploy", Password: "a:b=c"}},
		{name: "basic, YAML with '=' in the value", content: "username: deploy\npassword: a=b\n", want: Credentials{Username: "deploy", Password: "a=b"}},
		{name: "ssh key path, relative", content: "sshPrivateKey: id_ed25519\nsshKnownHosts: known_hosts\n", want: Credentials{SSHPrivateKey: key, SSHKnownHosts: []byte("github.com " + pub + "\n")}},
		{name: "ssh key path, key=value", content: "sshPrivateKey=" + filepath.Join(dir, "id_ed25519") + "\nsshUser=deployer\n", want: Credentials{SSHPrivateKey: key, SSHUser: "deployer"}},
		{name: "ssh key inline", content: "sshPrivateKey: |\n" + indentedKey + "\nsshKnownHosts: github.com " + pub + "\n", want: Credentials{SSHPrivateKey: []byte(strings.TrimSpace(string(key)) + "\n"), SSHKnownHosts: []byte("github.com " + pub)}},
		{name: "unknown key", content: "tokn: abc\n", wantErr: `unknown key "tokn"`},
		{name: "two methods", content: "token: a\nusername: b\npassword: c\n", wantErr: "more than one method"},
		{name: "username alone", content: "username: deploy\n", wantErr: "username and password go together"},
		{name: "known hosts without key", content: "token: a\nsshKnownHosts: known_hosts\n", wantErr: "sshUser and sshKnownHosts need sshPrivateKey"},
		{name: "empty", content: "# nothing\n", wantErr: "no credentials"},
		{name: "bad key", content: "sshPrivateKey: |\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  garbage\n  -----END OPENSSH PRIVATE KEY-----\n", wantErr: "sshPrivateKey: "},
		{name: "missing key file", content: "sshPrivateKey: nope\n", wantErr: "sshPrivateKey: open " + filepath.Join(dir, "nope")},
		{name: "bad YAML", content: "token: [a\n", wantErr: "parse YAML"},
		{name: "bad key=value line", content: "token=a\njunk\n", wantErr: "line 2: want key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "creds")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadCredentials(path)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "credentials "+path+": ") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadCredentials = %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b Credentials) bool {
				return a.Token == b.Token && a.Username == b.Username && a.Password == b.Password &&
					string(a.SSHPrivateKey) == string(b.SSHPrivateKey) && string(a.SSHKnownHosts) == string(b.SSHKnownHosts) && a.SSHUser == b.SSHUser
			})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	if _, err := LoadCredentials(filepath.Join(dir, "absent")); err == nil {
		t.Error("LoadCredentials of a missing file succeeded")
	}
}

func TestCredentialsDoNotPrintSecrets(t *testing.T) {
	t.Parallel()
	key, _ := testSSHKey(t)
	for _, c := range []Credentials{
		{Token: "sekrit-token"},
		{Username: "deploy", Password: "sekrit-password"},
		{SSHPrivateKey: key},
	} {
		for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprint(Git{Name: "x", Auth: c})} {
			if strings.Contains(s, "sekrit") || strings.Contains(s, "PRIVATE KEY") {
				t.Errorf("printed credentials reveal a secret: %s", s)
			}
		}
	}
}

func TestCredentialsAuthMethod(t *testing.T) {
	t.Parallel()
	key, _ := testSSHKey(t)
	tests := []struct {
		name    string
		c       Credentials
		url     string
		want    string // the method's name, "" for anonymous
		wantErr string
	}{
		{"anonymous", Credentials{}, "https://example.com/r.git", "", ""},
		{"token over https", Credentials{Token: "t"}, "https://example.com/r.git", (&githttp.TokenAuth{}).Name(), ""},
		{"basic over http", Credentials{Username: "u", Password: "p"}, "http://example.com/r.git", (&githttp.BasicAuth{}).Name(), ""},
		{"key over ssh", Credentials{SSHPrivateKey: key}, "git@example.com:org/r.git", "ssh-public-keys", ""},
		{"anything over a local path", Credentials{Token: "t"}, "/srv/git/r", "", ""},
		{"token over ssh", Credentials{Token: "t"}, "ssh://git@example.com/r.git", "", "token credentials need an http(s) URL, not ssh"},
		{"key over https", Credentials{SSHPrivateKey: key}, "https://example.com/r.git", "", "ssh key credentials need an ssh URL, not https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ep, err := endpoint(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			m, err := tt.c.authMethod(ep, 0)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("authMethod = %v, %v; want error %q", m, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := methodName(m); got != tt.want {
				t.Errorf("method = %q, want %q", got, tt.want)
			}
		})
	}
}

func methodName(m transport.AuthMethod) string {
	if m == nil {
		return ""
	}
	return m.Name()
}
