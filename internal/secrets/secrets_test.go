package secrets

import (
	"errors"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

const plainSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
type: Opaque
stringData:
  password: hunter2-plaintext
  port: "5432"
data:
  token: c2VjcmV0LXRva2Vu
`

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newKey(t *testing.T) Key {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEncryptDecryptRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := newKey(t), newKey(t)
	for _, tc := range []struct {
		format, doc string
	}{
		{"yaml", plainSecret},
		{"json", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": "hunter2-plaintext"}}`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			enc, err := Encrypt([]byte(tc.doc), tc.format, []string{a.Recipient, b.Recipient, a.Recipient}, now)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(enc), "hunter2") {
				t.Fatalf("ciphertext holds the plaintext:\n%s", enc)
			}
			// metadata stays readable: only data and stringData are encrypted
			if !strings.Contains(string(enc), "db") || !strings.Contains(string(enc), "ENC[AES256_GCM") {
				t.Fatalf("want readable metadata and encrypted values:\n%s", enc)
			}
			rs, err := Recipients(enc, tc.format)
			if err != nil || len(rs) != 2 || rs[0] != a.Recipient || rs[1] != b.Recipient {
				t.Fatalf("Recipients = %v, %v; want the two recipients once each", rs, err)
			}
			for _, k := range []Key{a, b} {
				d, err := NewDecryptor("cluster x", k.Identity)
				if err != nil {
					t.Fatal(err)
				}
				plain, err := d.Decrypt("secrets/db."+tc.format, enc, tc.format)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := yaml.Unmarshal(plain, &m); err != nil {
					t.Fatal(err)
				}
				sd := m["stringData"].(map[string]any)
				if sd["password"] != "hunter2-plaintext" {
					t.Errorf("decrypted password = %v", sd["password"])
				}
				if _, ok := m["sops"]; ok {
					t.Errorf("plaintext keeps the sops metadata:\n%s", plain)
				}
			}
		})
	}
}

func TestDecryptRefusals(t *testing.T) {
	t.Parallel()
	a, other := newKey(t), newKey(t)
	enc, err := Encrypt([]byte(plainSecret), "yaml", []string{a.Recipient}, now)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDecryptor("cluster eu-1", a.Identity)
	if err != nil {
		t.Fatal(err)
	}
	od, err := NewDecryptor("cluster us-1", other.Identity)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dec  *Decryptor
		doc  string
		want string
	}{
		{"another cluster's key", od, string(enc), "not encrypted for cluster us-1 (recipients: " + a.Recipient + ")"},
		{"metadata edited", d, strings.Replace(string(enc), "namespace: app", "namespace: other", 1), "MAC mismatch"},
		{"value moved", d, strings.Replace(string(enc), "password:", "passwd:", 1), "not SOPS ciphertext, or not for this place"},
		{"value added in plaintext", d, strings.Replace(string(enc), "stringData:\n", "stringData:\n    extra: plain-added\n", 1), "not SOPS ciphertext"},
		{"not encrypted", d, plainSecret, "SOPS metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.dec.Decrypt("secrets/db.yaml", []byte(tc.doc), "yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "plain-added") {
				t.Errorf("error holds a value: %v", err)
			}
		})
	}
	if _, err := od.Decrypt("f", enc, "yaml"); !errors.Is(err, ErrNotForThisKey) {
		t.Errorf("err = %v, want ErrNotForThisKey", err)
	}
}

func TestEncryptRefusals(t *testing.T) {
	t.Parallel()
	a := newKey(t)
	for _, tc := range []struct {
		name, doc  string
		recipients []string
		want       string
	}{
		{"a ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n", []string{a.Recipient}, `only a Secret manifest can be encrypted: this is apiVersion "v1" kind "ConfigMap"`},
		{"two documents", plainSecret + "---\n" + plainSecret, []string{a.Recipient}, "want one document per file"},
		{"empty", "", []string{a.Recipient}, "the file is empty"},
		{"nothing to encrypt", "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", []string{a.Recipient}, "neither data nor stringData"},
		{"already encrypted", plainSecret + "sops: {version: 3.13.3}\n", []string{a.Recipient}, "already SOPS-encrypted"},
		{"no recipients", plainSecret, nil, "no recipients"},
		{"not a recipient", plainSecret, []string{"age1nope"}, `age recipient "age1nope"`},
		{"an overlong recipient", plainSecret, []string{"age1" + strings.Repeat("q", 200)}, "204 characters, at most 100"},
		{"too big", plainSecret + "# " + strings.Repeat("x", MaxDocumentBytes), []string{a.Recipient}, "at most 1048576"},
		{"not YAML", "a: [", []string{a.Recipient}, "parse:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Encrypt([]byte(tc.doc), "yaml", tc.recipients, now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestIdentityFile(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	got, err := ParseIdentity(FormatIdentity(k))
	if err != nil || got != k {
		t.Fatalf("ParseIdentity(FormatIdentity(k)) = %v, %v; want k", got, err)
	}
	for _, bad := range []string{"", "# only a comment\n", "AGE-SECRET-KEY-1XYZ\n", k.Identity + "\n" + k.Identity + "\n"} {
		if _, err := ParseIdentity([]byte(bad)); err == nil {
			t.Errorf("ParseIdentity(%q): no error", bad)
		} else if strings.Contains(err.Error(), k.Identity) {
			t.Errorf("error quotes the identity: %v", err)
		}
	}
	if err := CheckRecipient(k.Recipient); err != nil {
		t.Errorf("CheckRecipient(a real recipient) = %v", err)
	}
	if err := CheckRecipient(k.Identity); err == nil {
		t.Errorf("CheckRecipient(an identity): no error")
	}
}
