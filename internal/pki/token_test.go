package pki

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// testFingerprint stands for a CA fingerprint: 64 lowercase hex digits.
const testFingerprint = "0123456789abcdef0123456789abcdef" + "fedcba9876543210fedcba9876543210"

func TestJoinTokenRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cluster string
	}{
		{name: "short", cluster: "a"},
		{name: "digits", cluster: "42"},
		{name: "dashes", cluster: "prod-eu-west-1"},
		{name: "dots", cluster: "prod.eu.example.com"},
		{name: "dots and dashes", cluster: "edge-7.store-0042.eu-west-1"},
		{name: "longest", cluster: strings.Repeat("abcdefgh.", 28) + "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, err := NewJoinToken(tt.cluster, testFingerprint)
			if err != nil {
				t.Fatal(err)
			}
			s := tok.Encode()
			if parts := strings.Split(s, "."); len(parts) != 5 || parts[0] != "flt1" {
				t.Errorf("Encode() = %q, want flt1 and four more dot-separated fields", s)
			}
			// Pasted with a trailing newline, as from a terminal.
			got, err := ParseJoinToken(" " + s + "\n")
			if err != nil {
				t.Fatalf("ParseJoinToken(%q): %v", s, err)
			}
			if got != tok {
				t.Errorf("ParseJoinToken(Encode()) = %#v, want %#v", got, tok)
			}
			if got.Secret != tok.Secret {
				t.Error("secret did not survive the round trip")
			}
		})
	}
}

func TestNewJoinToken(t *testing.T) {
	t.Parallel()
	a, err := NewJoinToken("prod", strings.ToUpper(testFingerprint))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewJoinToken("prod", testFingerprint)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := hex.DecodeString(a.ID); err != nil || len(id) != 8 || a.ID != strings.ToLower(a.ID) {
		t.Errorf("ID = %q, want 8 bytes in lowercase hex", a.ID)
	}
	if secret, err := base64.RawURLEncoding.DecodeString(a.Secret); err != nil || len(secret) != 32 {
		t.Errorf("Secret = %q, want 32 bytes in unpadded base64url", a.Secret)
	}
	if a.CAFingerprint != testFingerprint[:32] {
		t.Errorf("CAFingerprint = %q, want the fingerprint's first 32 hex digits %q", a.CAFingerprint, testFingerprint[:32])
	}
	if a.ID == b.ID || a.Secret == b.Secret {
		t.Error("two tokens share an ID or secret")
	}
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), fmt.Sprintf("%v", &a)} {
		if strings.Contains(s, a.Secret) {
			t.Errorf("formatted token %q shows the secret", s)
		}
	}

	errs := []struct {
		name, cluster, fingerprint, wantErr string
	}{
		{name: "invalid cluster", cluster: "prod_eu", fingerprint: testFingerprint, wantErr: `join token: cluster name "prod_eu": invalid character '_'`},
		{name: "leading dash", cluster: "-prod", fingerprint: testFingerprint, wantErr: "each part must start and end with a letter or digit"},
		{name: "double dot", cluster: "prod..eu", fingerprint: testFingerprint, wantErr: "empty part between dots"},
		{name: "too long", cluster: strings.Repeat("a", 254), fingerprint: testFingerprint, wantErr: "longer than 253 characters"},
		{name: "short fingerprint", cluster: "prod", fingerprint: testFingerprint[:32], wantErr: "want 64 hex digits"},
		{name: "not hex", cluster: "prod", fingerprint: strings.Repeat("g", 64), wantErr: "want 64 hex digits"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewJoinToken(tt.cluster, tt.fingerprint)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewJoinToken() error = %s, want it to contain %q", errString(err), tt.wantErr)
			}
		})
	}
}

func TestParseJoinTokenErrors(t *testing.T) {
	t.Parallel()
	valid := JoinToken{
		ID:            "0123456789abcdef",
		Secret:        base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("s", 32))),
		Cluster:       "prod.eu-1",
		CAFingerprint: testFingerprint[:32],
	}
	good := valid.Encode()
	with := func(edit func(*JoinToken)) string {
		t := valid
		edit(&t)
		return t.Encode()
	}
	cluster := base64.RawURLEncoding.EncodeToString([]byte(valid.Cluster))

	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "empty", in: "", wantErr: "join token: not a flotilla token"},
		{name: "prose", in: "hello world", wantErr: "join token: not a flotilla token"},
		{name: "a JWT", in: "eyJhbGciOiJIUzI1NiJ9.e30.abc", wantErr: "join token: not a flotilla token"},
		{name: "kubeadm token", in: "abcdef.0123456789abcdef", wantErr: "join token: not a flotilla token"},
		{name: "look-alike prefix", in: "fltx.a.b.c.d", wantErr: "join token: not a flotilla token"},
		{name: "future version", in: "flt2" + strings.TrimPrefix(good, "flt1"), wantErr: `join token: unsupported version "flt2"`},
		{name: "prefix only", in: "flt1", wantErr: "join token: truncated"},
		{name: "cut inside the secret", in: good[:strings.Index(good, valid.Secret)+10], wantErr: "join token: truncated"},
		{name: "cut inside the pin", in: good[:len(good)-5], wantErr: "join token: truncated: CA pin has 27 characters, want 32"},
		{name: "extra field", in: good + ".x", wantErr: "join token: malformed: 6 fields, want 5"},
		{name: "cluster not base64url", in: "flt1.pr+d." + strings.SplitN(good, ".", 3)[2], wantErr: "join token: malformed cluster"},
		{name: "cluster with padding", in: strings.Replace(good, cluster, cluster+"=", 1), wantErr: "join token: malformed cluster"},
		{name: "invalid cluster name", in: with(func(t *JoinToken) { t.Cluster = "Prod" }), wantErr: `join token: cluster name "Prod": invalid character 'P'`},
		{name: "empty cluster", in: with(func(t *JoinToken) { t.Cluster = "" }), wantErr: "join token: cluster name: empty"},
		{name: "ID not hex", in: with(func(t *JoinToken) { t.ID = "0123456789abcdeg" }), wantErr: "join token: malformed ID"},
		{name: "ID too long", in: with(func(t *JoinToken) { t.ID += "00" }), wantErr: "join token: malformed ID: 18 characters, want 16"},
		{name: "ID too short", in: with(func(t *JoinToken) { t.ID = t.ID[:4] }), wantErr: "join token: truncated: ID has 4 characters, want 16"},
		{name: "secret in standard base64", in: with(func(t *JoinToken) { t.Secret = "+" + t.Secret[1:] }), wantErr: "join token: malformed secret"},
		{name: "secret with spare bits set", in: with(func(t *JoinToken) { t.Secret = t.Secret[:42] + "9" }), wantErr: "join token: malformed secret"},
		{name: "pin not hex", in: with(func(t *JoinToken) { t.CAFingerprint = strings.Repeat("z", 32) }), wantErr: "join token: malformed CA pin"},
		{name: "pin too long", in: with(func(t *JoinToken) { t.CAFingerprint = testFingerprint }), wantErr: "join token: malformed CA pin: 64 characters, want 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJoinToken(tt.in)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("ParseJoinToken(%q) = %#v, %s; want error starting %q", tt.in, got, errString(err), tt.wantErr)
			}
		})
	}

	t.Run("pin in upper case", func(t *testing.T) {
		got, err := ParseJoinToken(strings.Replace(good, valid.CAFingerprint, strings.ToUpper(valid.CAFingerprint), 1))
		if err != nil || got != valid {
			t.Errorf("ParseJoinToken() = %#v, %v; want %#v", got, err, valid)
		}
	})
}

func TestSecretHash(t *testing.T) {
	t.Parallel()
	tok, err := NewJoinToken("prod", testFingerprint)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte(tok.Secret))
	if got := SecretHash(tok.Secret); string(got) != string(want[:]) {
		t.Errorf("SecretHash() = %x, want %x", got, want)
	}
	if string(SecretHash("a")) == string(SecretHash("b")) {
		t.Error("different secrets hash alike")
	}
}

// FuzzParseJoinToken checks that whatever parses is canonical: encoding it again gives a
// string that parses to the same token.
func FuzzParseJoinToken(f *testing.F) {
	for _, c := range []string{"a", "prod.eu-1", "x-y.z"} {
		tok, err := NewJoinToken(c, testFingerprint)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok.Encode())
	}
	f.Add("flt1....")
	f.Add("flt1.cHJvZA.0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.0123456789ABCDEF0123456789abcdef")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseJoinToken(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "join token: ") {
				t.Errorf("error %q does not start with the object", err)
			}
			return
		}
		again, err := ParseJoinToken(tok.Encode())
		if err != nil || again != tok {
			t.Errorf("ParseJoinToken(Encode(%#v)) = %#v, %v", tok, again, err)
		}
	})
}

// FuzzJoinTokenCluster checks that every valid cluster name survives encoding.
func FuzzJoinTokenCluster(f *testing.F) {
	for _, c := range []string{"a", "prod.eu-1", "a.b.c", "0-0", "Prod", "a/b", "a..b"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cluster string) {
		tok, err := NewJoinToken(cluster, testFingerprint)
		if err != nil {
			if validateClusterName(cluster) == nil {
				t.Errorf("NewJoinToken(%q): %v", cluster, err)
			}
			return
		}
		got, err := ParseJoinToken(tok.Encode())
		if err != nil || got != tok {
			t.Errorf("round trip of cluster %q: %#v, %v", cluster, got, err)
		}
	})
}
