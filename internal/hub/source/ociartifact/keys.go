package ociartifact

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Key is a public key the hub's operator trusts to sign OCI artifacts: the cosign.pub file
// `cosign generate-key-pair` writes (ECDSA P-256), or an RSA (2048 bits or more) or Ed25519
// key in the same PEM form (PKIX "PUBLIC KEY").
type Key struct {
	// Name is how sources name it (verify.cosign.publicKeys).
	Name string
	// Fingerprint is "sha256:" and the hex SHA-256 of the key's DER (PKIX) encoding: what the
	// audit trail records, and what `openssl pkey -pubin -outform DER | sha256sum` prints.
	Fingerprint string
	public      crypto.PublicKey
}

// maxKeyFileBytes bounds a key file: a PEM public key is well under a kilobyte (an RSA key of
// 8192 bits is about 1.5 KiB).
const maxKeyFileBytes = 16 << 10

var keyNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// ParseKey reads a PEM public key. name names it in errors.
func ParseKey(name string, data []byte) (Key, error) {
	if !keyNameRE.MatchString(name) {
		return Key{}, fmt.Errorf("key name %q: want letters, digits, '.', '_' or '-' (at most 63), starting with a letter or digit", name)
	}
	block, rest := pem.Decode(data)
	if block == nil {
		return Key{}, fmt.Errorf("key '%s': no PEM block (want the cosign.pub `cosign generate-key-pair` writes)", name)
	}
	if block.Type != "PUBLIC KEY" {
		return Key{}, fmt.Errorf("key '%s': PEM block is %q, want \"PUBLIC KEY\" (a private key or certificate does not belong here)", name, block.Type)
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return Key{}, fmt.Errorf("key '%s': more than one PEM block: want exactly one public key", name)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return Key{}, fmt.Errorf("key '%s': %w", name, err)
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if ecdsaHash(k) == 0 {
			return Key{}, fmt.Errorf("key '%s': ECDSA curve %s is not supported (want P-256, as cosign generate-key-pair makes, P-384 or P-521)", name, k.Curve.Params().Name)
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return Key{}, fmt.Errorf("key '%s': RSA key of %d bits is too weak (want 2048 or more)", name, k.N.BitLen())
		}
	case ed25519.PublicKey:
	default:
		return Key{}, fmt.Errorf("key '%s': %T keys are not supported (want ECDSA P-256, RSA or Ed25519)", name, pub)
	}
	sum := sha256.Sum256(block.Bytes)
	return Key{Name: name, Fingerprint: "sha256:" + hex.EncodeToString(sum[:]), public: pub}, nil
}

// LoadKey reads a PEM public key file.
func LoadKey(name, path string) (Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return Key{}, fmt.Errorf("key '%s': %w", name, err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return Key{}, fmt.Errorf("key '%s': read %s: %w", name, path, err)
	}
	if len(data) > maxKeyFileBytes {
		return Key{}, fmt.Errorf("key '%s': %s is over %d bytes: not a public key", name, path, maxKeyFileBytes)
	}
	k, err := ParseKey(name, data)
	if err != nil {
		return Key{}, fmt.Errorf("%w (file %s)", err, path)
	}
	return k, nil
}

// LoadKeys reads the keys the hub's operator configured, by name (flotilla hub --verify-key
// NAME=FILE): every file must exist and parse, so that a mistake shows at start.
func LoadKeys(files map[string]string) (map[string]Key, error) {
	keys := make(map[string]Key, len(files))
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names) // the first error is the same at every start
	for _, n := range names {
		k, err := LoadKey(n, files[n])
		if err != nil {
			return nil, err
		}
		keys[n] = k
	}
	return keys, nil
}

// ParseKeyFlag splits a --verify-key value, NAME=FILE.
func ParseKeyFlag(v string) (name, file string, err error) {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return "", "", fmt.Errorf("--verify-key %q: want NAME=FILE, e.g. release=/etc/flotilla/cosign.pub", v)
	}
	if !keyNameRE.MatchString(name) {
		return "", "", fmt.Errorf("--verify-key %q: key name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", v, name)
	}
	return name, file, nil
}

// ecdsaHash is the hash cosign (sigstore's default algorithm for the key) signs with on
// each curve; 0 for a curve it does not use.
func ecdsaHash(k *ecdsa.PublicKey) crypto.Hash {
	switch k.Curve {
	case elliptic.P256():
		return crypto.SHA256
	case elliptic.P384():
		return crypto.SHA384
	case elliptic.P521():
		return crypto.SHA512
	}
	return 0
}

// verify checks sig over payload as cosign makes it with this kind of key: ECDSA signs the
// payload's digest (SHA-256, -384 or -512 by curve), RSA (PKCS #1 v1.5) its SHA-256, and
// Ed25519 its SHA-512 as Ed25519ph (cosign's default since v2.4) or, from older cosign
// versions, the payload itself.
func (k Key) verify(payload, sig []byte) error {
	switch pub := k.public.(type) {
	case *ecdsa.PublicKey:
		h := ecdsaHash(pub).New()
		h.Write(payload)
		if !ecdsa.VerifyASN1(pub, h.Sum(nil), sig) {
			return errors.New("ECDSA signature does not match the payload")
		}
	case *rsa.PublicKey:
		sum := sha256.Sum256(payload)
		if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
			return fmt.Errorf("RSA signature does not match the payload: %w", err)
		}
	case ed25519.PublicKey:
		sum := sha512.Sum512(payload)
		if ed25519.VerifyWithOptions(pub, sum[:], sig, &ed25519.Options{Hash: crypto.SHA512}) != nil && !ed25519.Verify(pub, payload, sig) {
			return errors.New("Ed25519 signature does not match the payload (as Ed25519ph or pure Ed25519)")
		}
	default:
		return fmt.Errorf("%T keys are not supported", k.public)
	}
	return nil
}
