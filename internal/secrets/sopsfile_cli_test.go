package secrets_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/flotilla/flotilla/internal/secrets"
	"github.com/flotilla/flotilla/internal/secrets/sopsfile"
	"github.com/flotilla/flotilla/internal/secrets/sopstest"
)

// richDoc holds every kind of value SOPS distinguishes, comments, an anchor and its alias,
// and keys the rules below select.
const richDoc = `# a head comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: rich # inline
  labels: {app: web}
data:
  port: 8080
  ratio: 1.5
  whole: 2.0
  enabled: true
  disabled: false
  nothing: null
  empty: ""
  when: 2024-05-01T10:00:00Z
  date: 2001-12-14
  quoted: "123"
  multi: |
    line one
    line two
  list:
    - a
    # a comment in a list
    - 2
    - true
  nested:
    deep:
      value: x
  password_unencrypted: clear
  token_secret: s3cret
  anchor: &a {k: v}
  alias: *a
`

// ruleFlags are the sops CLI's encryption rules, each with the same rule for sopsfile.
var ruleFlags = []struct {
	name  string
	flags []string
	rules sopsfile.Rules
}{
	{"default", nil, sopsfile.Rules{}},
	{"encrypted_regex", []string{"--encrypted-regex", "^data$"}, sopsfile.Rules{EncryptedRegex: "^data$"}},
	{"unencrypted_regex", []string{"--unencrypted-regex", "^(metadata|kind)$"}, sopsfile.Rules{UnencryptedRegex: "^(metadata|kind)$"}},
	{"encrypted_suffix", []string{"--encrypted-suffix", "_secret"}, sopsfile.Rules{EncryptedSuffix: "_secret"}},
	{"unencrypted_suffix", []string{"--unencrypted-suffix", "_clear"}, sopsfile.Rules{UnencryptedSuffix: "_clear"}},
	{"mac_only_encrypted", []string{"--encrypted-regex", "^data$", "--mac-only-encrypted"}, sopsfile.Rules{EncryptedRegex: "^data$", MACOnlyEncrypted: true}},
}

// semantic is a document as a program reads it: comments, order and layout gone, and a float
// of no fraction an integer (the sops CLI writes every value it decrypts again, and 2.0
// comes out as 2; this package leaves a value in clear as it was).
func semantic(t *testing.T, doc []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("%v\n%s", err, doc)
		}
		out = append(out, wholeFloats(v))
	}
}

func wholeFloats(v any) any {
	switch v := v.(type) {
	case float64:
		if v == float64(int(v)) {
			return int(v)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = wholeFloats(e)
		}
	case []any:
		for i, e := range v {
			v[i] = wholeFloats(e)
		}
	}
	return v
}

func asJSON(t *testing.T, yamlDoc string) []byte {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(yamlDoc), &v); err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["data"].(map[string]any)["when"] = "2024-05-01T10:00:00Z" // JSON has no timestamps
	v.(map[string]any)["data"].(map[string]any)["date"] = "2001-12-14"
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every rule and value kind, both ways: what the sops CLI encrypts decrypts here to what the
// CLI itself decrypts, and what sopsfile encrypts the CLI decrypts to the original; a value
// swapped or a clear value edited is refused here.
func TestSOPSFormatAgainstTheCLI(t *testing.T) {
	t.Parallel()
	k := mustKey(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.txt")
	write(t, keyFile, secrets.FormatIdentity(k))
	env := []string{"SOPS_AGE_KEY_FILE=" + keyFile}
	dec, err := secrets.NewDecryptor("cluster eu-1", k.Identity)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		plain := []byte(richDoc)
		if format == "json" {
			plain = asJSON(t, richDoc)
		}
		plainFile := filepath.Join(dir, "plain."+format)
		write(t, plainFile, plain)
		for _, rule := range ruleFlags {
			t.Run(format+"/"+rule.name, func(t *testing.T) {
				// The CLI encrypts; this package decrypts it as the CLI does.
				enc := sopstest.Run(t, nil, append(append([]string{"--encrypt", "--age", k.Recipient}, rule.flags...), plainFile)...)
				got, err := dec.Decrypt("f", enc, format)
				if err != nil {
					t.Fatalf("decrypt the CLI's file: %v\n%s", err, enc)
				}
				encFile := filepath.Join(t.TempDir(), "enc."+format)
				write(t, encFile, enc)
				want := sopstest.Run(t, env, "--decrypt", encFile)
				if g, w := semantic(t, got), semantic(t, want); !reflect.DeepEqual(g, w) {
					t.Errorf("decrypted here:\n%s\nby the CLI:\n%s", got, want)
				}

				// Tampering: two encrypted values swapped, or a value left in clear edited.
				// The first two ciphertexts (two values, or a value and the MAC) trade places.
				values := strings.Split(string(enc), "ENC[")
				if len(values) < 3 {
					t.Fatalf("fewer than two ciphertexts (a value and the MAC) in:\n%s", enc)
				}
				a, b := "ENC["+strings.SplitN(values[1], "]", 2)[0]+"]", "ENC["+strings.SplitN(values[2], "]", 2)[0]+"]"
				swapped := strings.Replace(strings.Replace(strings.Replace(string(enc), a, "SWAP", 1), b, a, 1), "SWAP", b, 1)
				if _, err := dec.Decrypt("f", []byte(swapped), format); err == nil {
					t.Error("two ciphertexts swapped: decrypted")
				}
				if edited := strings.Replace(string(enc), "rich", "poor", 1); edited != string(enc) && !rule.rules.MACOnlyEncrypted {
					if _, err := dec.Decrypt("f", []byte(edited), format); err == nil {
						t.Error("the name, in clear, edited: decrypted")
					}
				}

				// This package encrypts; the CLI decrypts it as it decrypts its own (which reads a
				// float of no fraction back as an integer, and a date as a timestamp).
				key := bytes.Repeat([]byte{9}, 32)
				md := sopsfile.Metadata{Rules: rule.rules}
				stanza, err := secrets.WrapDataKeyForTest(key, k.Recipient)
				if err != nil {
					t.Fatal(err)
				}
				md.Age = []sopsfile.AgeStanza{stanza}
				ours, err := sopsfile.Encrypt(plain, format, key, md, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				// Every rule here encrypts token_secret (under data, and ending in _secret).
				for who, doc := range map[string][]byte{"the CLI": enc, "this package": ours} {
					if bytes.Contains(doc, []byte("s3cret")) {
						t.Errorf("%s left token_secret in clear:\n%s", who, doc)
					}
				}
				oursFile := filepath.Join(t.TempDir(), "ours."+format)
				write(t, oursFile, ours)
				back := sopstest.Run(t, env, "--decrypt", oursFile)
				if g, w := semantic(t, back), semantic(t, want); !reflect.DeepEqual(g, w) {
					t.Errorf("the CLI decrypted what this package encrypted to:\n%s\nwant:\n%s\nencrypted:\n%s", back, want, ours)
				}
				again, err := dec.Decrypt("f", ours, format)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := semantic(t, again), semantic(t, want); !reflect.DeepEqual(g, w) {
					t.Errorf("decrypted here:\n%s\nwant:\n%s", again, want)
				}
			})
		}
	}
}
