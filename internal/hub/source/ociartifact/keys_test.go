package ociartifact

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
)

func pemPublic(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func pemPrivate(t *testing.T, priv any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TestLoadKeyRefusals: what is not a usable public key fails the hub's start, naming the key
// and the file.
func TestLoadKeyRefusals(t *testing.T) {
	t.Parallel()
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	ed, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name, key string
		data      []byte
		want      string
	}{
		{"not PEM", "release", []byte("hello"), "key 'release': no PEM block"},
		{"a private key", "release", pemPrivate(t, edPriv), `key 'release': PEM block is "PRIVATE KEY", want "PUBLIC KEY"`},
		{"P-224", "release", pemPublic(t, &p224.PublicKey), "ECDSA curve P-224 is not supported"},
		{"RSA 1024", "release", pemPublic(t, &rsa1024.PublicKey), "RSA key of 1024 bits is too weak"},
		{"two keys", "release", append(pemPublic(t, ed), pemPublic(t, &p256.PublicKey)...), "more than one PEM block"},
		{"a bad name", "../x", pemPublic(t, ed), `key name "../x"`},
		{"too big", "release", []byte(strings.Repeat("x", maxKeyFileBytes+1)), "is over 16384 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cosign.pub")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadKeys(map[string]string{tc.key: path})
			wantError(t, err, tc.want)
		})
	}
	_, err := LoadKeys(map[string]string{"release": "/nonexistent/cosign.pub"})
	wantError(t, err, "key 'release'", "/nonexistent/cosign.pub")
	for _, bad := range []string{"release", "=x", "release=", "../k=/x"} {
		if _, _, err := ParseKeyFlag(bad); err == nil {
			t.Errorf("ParseKeyFlag(%q) accepted", bad)
		}
	}
	if n, f, err := ParseKeyFlag("release=/etc/cosign.pub"); err != nil || n != "release" || f != "/etc/cosign.pub" {
		t.Errorf("ParseKeyFlag: %q %q %v", n, f, err)
	}
}

// TestImportedKeys: RSA, Ed25519 and ECDSA P-384 keys imported into cosign (cosign import-key-pair) sign
// artifacts the hub verifies with their public keys; a key of one kind does not verify
// another's signature.
func TestImportedKeys(t *testing.T) {
	t.Parallel()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	fx := newFixture(t, Options{Keys: map[string]Key{}})
	keys := map[string]Key{}
	pairs := map[string]ocitest.KeyPair{}
	for name, priv := range map[string]any{"rsa": rsaKey, "ed25519": edKey, "p384": p384} {
		kp := ocitest.ImportKeyPair(t, pemPrivate(t, priv))
		k, err := LoadKey(name, kp.Public)
		if err != nil {
			t.Fatal(err)
		}
		keys[name], pairs[name] = k, kp
	}
	f, err := New(Options{Keys: keys, Transport: fx.reg.Client.Transport})
	if err != nil {
		t.Fatal(err)
	}
	for name, kp := range pairs {
		t.Run(name, func(t *testing.T) {
			repo := "team/" + name
			d := ocitest.PushFlux(t, fx.reg, repo, "v1", map[string]string{"deploy.yaml": deployment}, ocitest.Push{})
			ocitest.Sign(t, fx.reg, kp, repo, d)
			got, err := f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Tag: "v1", Verify: verifyWith(name)}), "", emptyDir(t))
			if err != nil {
				t.Fatal(err)
			}
			if got.Verified["key"] != name || got.Verified["fingerprint"] != keys[name].Fingerprint {
				t.Errorf("Verified %v", got.Verified)
			}
			other := map[string]string{"rsa": "ed25519", "ed25519": "p384", "p384": "rsa"}[name]
			_, err = f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Tag: "v1", Verify: verifyWith(other)}), "", emptyDir(t))
			wantError(t, err, "signature by key '"+other+"' does not verify")
		})
	}
}
