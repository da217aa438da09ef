package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/secrets/sopstest"
)

const cliSecret = "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: cli-plaintext-42}\n"

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSecretEncryptRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "db.yaml")
	cm := filepath.Join(dir, "cm.yaml")
	if err := os.WriteFile(plain, []byte(cliSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, _ := secrets.NewKey()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"whom for", []string{"secret", "encrypt", plain}, 2, "say whom to encrypt for: --selector LABELS (clusters) and/or --recipient age1..."},
		{"two places to write", []string{"secret", "encrypt", "--recipient", k.Recipient, "--in-place", "-o", "x", plain}, 2, "--in-place and -o both say where to write"},
		{"in place on standard input", []string{"secret", "encrypt", "--recipient", k.Recipient, "--in-place", "-"}, 2, "--in-place needs a FILE"},
		{"not a recipient", []string{"secret", "encrypt", "--recipient", "age1bogus", plain}, 2, `--recipient: age recipient "age1bogus"`},
		{"one file", []string{"secret", "encrypt", "--recipient", k.Recipient, plain, plain}, 2, "secret encrypt takes one argument"},
		{"a ConfigMap", []string{"secret", "encrypt", "--recipient", k.Recipient, cm}, 1, `only a Secret manifest can be encrypted: this is apiVersion "v1" kind "ConfigMap"`},
		{"secret alone", []string{"secret"}, 2, "flotilla secret needs a subcommand: encrypt"},
		{"help has examples", []string{"secret", "encrypt", "--help"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.code, tc.want)
			}
			if tc.code == 0 && !strings.Contains(out, "flotilla secret encrypt --selector env=prod --in-place secrets/db.yaml") {
				t.Errorf("help without the example:\n%s", out)
			}
		})
	}
	if data, _ := os.ReadFile(plain); string(data) != cliSecret {
		t.Errorf("a refused command changed the file:\n%s", data)
	}
}

// secret encrypt --recipient writes what the real sops decrypts; render prints its ciphertext
// unless --decrypt with a key that can read it.
func TestSecretEncryptAndRender(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k, _ := secrets.NewKey()
	other, _ := secrets.NewKey()
	keyFile, otherFile := filepath.Join(dir, "key.txt"), filepath.Join(dir, "other.txt")
	for f, key := range map[string]secrets.Key{keyFile: k, otherFile: other} {
		if err := os.WriteFile(f, secrets.FormatIdentity(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(app, "db.yaml")
	if err := os.WriteFile(file, []byte(cliSecret), 0o640); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "secret", "encrypt", "--recipient", k.Recipient, "--in-place", file)
	if code != 0 || !strings.Contains(errOut, "Encrypted "+file+" for 0 clusters, 1 recipient(s) named with --recipient") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	enc, _ := os.ReadFile(file)
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 || strings.Contains(string(enc), "cli-plaintext-42") {
		t.Fatalf("in place: mode %v, content:\n%s", st.Mode().Perm(), enc)
	}
	if got := sopstest.Run(t, []string{"SOPS_AGE_KEY_FILE=" + keyFile}, "--decrypt", file); !bytes.Contains(got, []byte("cli-plaintext-42")) {
		t.Errorf("sops --decrypt:\n%s", got)
	}

	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		wantOut   string
		wantErr   string
		plaintext bool
	}{
		{"ciphertext by default", nil, 0, "ENC[AES256_GCM", "", false},
		{"decrypted with the key", []string{"--decrypt", "--key-file", keyFile}, 0, "cli-plaintext-42", "", true},
		{"another key", []string{"--decrypt", "--key-file", otherFile}, 1, "", "render db.yaml: document 1: not encrypted for the key in " + otherFile, false},
		{"--decrypt needs a key", []string{"--decrypt"}, 2, "", "--decrypt needs --key-file FILE", false},
		{"a key without --decrypt", []string{"--key-file", keyFile}, 2, "", "--key-file is only read with --decrypt", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"render", app}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit %d, %q, %q", code, out, errOut, tc.code, tc.wantOut, tc.wantErr)
			}
			if !tc.plaintext && strings.Contains(out+errOut, "cli-plaintext-42") {
				t.Errorf("plaintext printed:\n%s%s", out, errOut)
			}
		})
	}
}
