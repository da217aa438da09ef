package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHubVerifyKey: --verify-key NAME=FILE, shown in --help with an example; a malformed or
// repeated name is a usage error (exit 2); a file that is not a public key fails the start
// (exit 1) naming the key and the file.
func TestHubVerifyKey(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	code, help := run("hub", "--help")
	if code != 0 || !strings.Contains(help, "--verify-key stringArray") || !strings.Contains(help, "--verify-key release=/etc/flotilla/cosign.pub") {
		t.Errorf("hub --help (exit %d) does not show --verify-key and its example:\n%s", code, help)
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(bad, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"hub", "--data-dir", filepath.Join(dir, "hub"), "--fleet", t.TempDir(), "--agent-addr", "127.0.0.1:0", "--api-addr", "127.0.0.1:0"}
	tests := []struct {
		name  string
		keys  []string
		code  int
		wants []string
	}{
		{"no NAME=", []string{"--verify-key", bad}, 2, []string{`--verify-key "` + bad + `": want NAME=FILE, e.g. release=/etc/flotilla/cosign.pub`}},
		{"a name with a slash", []string{"--verify-key", "a/b=" + bad}, 2, []string{`key name "a/b"`}},
		{"a name twice", []string{"--verify-key", "release=" + bad, "--verify-key", "release=/x"}, 2, []string{"--verify-key: key 'release' named twice"}},
		{"a private key", []string{"--verify-key", "release=" + bad}, 1, []string{"key 'release'", `"ENCRYPTED SIGSTORE PRIVATE KEY", want "PUBLIC KEY"`, bad}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := run(append(append([]string{}, base...), tc.keys...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
