package sopsfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte{7}, 32)

func encryptForTest(t *testing.T, plain string, r Rules) string {
	t.Helper()
	out, err := Encrypt([]byte(plain), "yaml", testKey, Metadata{Age: []AgeStanza{{Recipient: "age1test", Enc: "x"}}, Rules: r}, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Each hostile or unsupported input is refused with what is wrong, and none of its values
// reaches the error.
func TestRefusals(t *testing.T) {
	t.Parallel()
	enc := encryptForTest(t, "a: hunter2\nb: 3\n", Rules{})
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'h'; i++ {
		bomb += string(i) + ": &" + string(i) + " [" + strings.Repeat("*"+string(i-1)+", ", 9) + "*" + string(i-1) + "]\n"
	}
	for _, tt := range []struct {
		name, doc string
		parse     bool // refused by Parse, not Decrypt
		want      string
	}{
		{name: "not encrypted", doc: "a: b\n", parse: true, want: "SOPS metadata: none"},
		{name: "a list", doc: "- a\n", parse: true, want: "a sequence, not a mapping"},
		{name: "alias bomb", doc: bomb, parse: true, want: "an alias bomb"},
		{name: "shamir", doc: "a: b\nsops:\n  key_groups: [{age: [{recipient: r, enc: e}]}, {age: [{recipient: s, enc: e}]}]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n",
			parse: true, want: "2 key groups (Shamir secret sharing)"},
		{name: "comment rule", doc: "a: b\nsops:\n  age: [{recipient: r, enc: e}]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  encrypted_comment_regex: x\n",
			parse: true, want: "encrypted_comment_regex are not supported"},
		{name: "two rules", doc: "a: b\nsops:\n  age: [{recipient: r, enc: e}]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  encrypted_regex: x\n  encrypted_suffix: y\n",
			parse: true, want: "more than one of"},
		{name: "no keys", doc: "a: b\nsops:\n  lastmodified: \"2024-01-01T00:00:00Z\"\n", parse: true, want: "no keys"},
		{name: "bad time", doc: "a: b\nsops:\n  age: [{recipient: r, enc: e}]\n  lastmodified: yesterday\n", parse: true, want: "lastmodified"},
		{name: "a value in clear", doc: strings.Replace(enc, "b: ENC[", "c: plain\nb: ENC[", 1), want: "not SOPS ciphertext"},
		{name: "a value moved", doc: strings.Replace(enc, "a: ENC[", "z: ENC[", 1), want: "not for this place"},
		{name: "a non-string key", doc: strings.Replace(enc, "a: ENC[", "1: ENC[", 1), want: "a key that is not a string"},
		{name: "a tag cut", doc: strings.Replace(enc, "==,type:str]", ",type:str]", 1), want: "not SOPS ciphertext"},
		{name: "the MAC edited", doc: strings.Replace(enc, "lastmodified: \"2023", "lastmodified: \"2022", 1), want: "cannot decrypt the stored MAC"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := Parse([]byte(tt.doc), "yaml")
			if err == nil && !tt.parse {
				_, err = d.Decrypt(testKey)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error holds a value: %v", err)
			}
		})
	}
}

// A value changed after encryption, added or reordered fails the MAC; with
// mac_only_encrypted a value in clear may change.
func TestMAC(t *testing.T) {
	t.Parallel()
	enc := encryptForTest(t, "data:\n  a: hunter2\n  b: \"2\"\nname: web\n", Rules{EncryptedRegex: "^data$"})
	only := encryptForTest(t, "data:\n  a: hunter2\nname: web\n", Rules{EncryptedRegex: "^data$", MACOnlyEncrypted: true})
	lines := strings.Split(enc, "\n")
	reordered := strings.Join(append([]string{lines[0], lines[2], lines[1]}, lines[3:]...), "\n")
	for _, tt := range []struct {
		name, doc string
		ok        bool
	}{
		{"as encrypted", enc, true},
		{"a value in clear changed", strings.Replace(enc, "name: web", "name: api", 1), false},
		{"a value in clear added", strings.Replace(enc, "name: web", "name: web\nextra: x", 1), false},
		{"values reordered", reordered, false},
		{"mac_only_encrypted, a value in clear changed", strings.Replace(only, "name: web", "name: api", 1), true},
	} {
		d, err := Parse([]byte(tt.doc), "yaml")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_, err = d.Decrypt(testKey)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrMAC) && !errors.Is(err, ErrValue)) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
