package ociartifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The signature layout cosign (v2, by default) writes: an image manifest tagged
// sha256-<hex>.sig in the artifact's repository, one layer per signature, each layer a
// simple-signing payload naming the signed manifest digest, the signature in an annotation.
const (
	cosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	cosignPayloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignPayloadType         = "cosign container image signature"
	// maxSignatures bounds the signature layers read; maxPayloadBytes one payload (a few
	// hundred bytes, more with annotations cosign sign -a adds).
	maxSignatures   = 32
	maxPayloadBytes = 64 << 10
)

// simpleSigning is the payload cosign signs.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// SignatureError says why an artifact's signature was refused.
type SignatureError struct {
	Digest string
	Keys   []string
	Reason string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("cosign signature of %s refused (keys %s): %s", e.Digest, quoteList(e.Keys), e.Reason)
}

// verifySignature checks that the manifest digest carries a cosign signature by one of keys,
// and returns the key that signed it.
func verifySignature(ctx context.Context, repo name.Repository, digest v1.Hash, keys []Key, opts []remote.Option) (Key, error) {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	refuse := func(format string, args ...any) error {
		return &SignatureError{Digest: digest.String(), Keys: names, Reason: fmt.Sprintf(format, args...)}
	}
	sigTag := repo.Tag(digest.Algorithm + "-" + digest.Hex + ".sig")
	desc, err := remote.Get(sigTag, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return Key{}, refuse("no cosign signature found for %s (no tag %s in %s; sign it with cosign sign --key ... %s@%s)", digest, sigTag.TagStr(), repo, repo, digest)
		}
		return Key{}, fmt.Errorf("read cosign signatures of %s (%s): %w", digest, sigTag, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return Key{}, refuse("signature manifest %s: %v", sigTag, err)
	}
	var reasons []string
	seen := 0
	for _, l := range m.Layers {
		sigB64, ok := l.Annotations[cosignSignatureAnnotation]
		if !ok {
			continue
		}
		if seen++; seen > maxSignatures {
			reasons = append(reasons, fmt.Sprintf("more than %d signatures: the rest were not read", maxSignatures))
			break
		}
		k, reason := checkSignatureLayer(ctx, repo, digest, l, sigB64, keys, opts)
		if reason == "" {
			return k, nil
		}
		reasons = append(reasons, reason)
	}
	if len(reasons) == 0 {
		return Key{}, refuse("no cosign signature found for %s (%s holds no signature layer)", digest, sigTag)
	}
	return Key{}, refuse("%s", strings.Join(reasons, "; "))
}

// checkSignatureLayer checks one signature: its payload (read and checked against its
// digest) must name the artifact's digest, and the signature must verify with one of keys.
// It returns the key, or why not.
func checkSignatureLayer(ctx context.Context, repo name.Repository, digest v1.Hash, l v1.Descriptor, sigB64 string, keys []Key, opts []remote.Option) (Key, string) {
	short := l.Digest.Hex
	if len(short) > 12 {
		short = short[:12]
	}
	which := "signature " + short
	if l.MediaType != cosignPayloadMediaType {
		return Key{}, fmt.Sprintf("%s: payload media type %q, want %q", which, l.MediaType, cosignPayloadMediaType)
	}
	if l.Size > maxPayloadBytes {
		return Key{}, fmt.Sprintf("%s: payload of %d bytes is over %d", which, l.Size, maxPayloadBytes)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return Key{}, fmt.Sprintf("%s: annotation %s is not base64: %v", which, cosignSignatureAnnotation, err)
	}
	payload, err := readBlob(ctx, repo, l.Digest, maxPayloadBytes, opts)
	if err != nil {
		return Key{}, fmt.Sprintf("%s: %v", which, err)
	}
	var verr []string
	var signer *Key
	for i := range keys {
		if err := keys[i].verify(payload, sig); err != nil {
			verr = append(verr, fmt.Sprintf("signature by key '%s' does not verify: %v", keys[i].Name, err))
			continue
		}
		signer = &keys[i]
		break
	}
	if signer == nil {
		return Key{}, fmt.Sprintf("%s: %s", which, strings.Join(verr, "; "))
	}
	// Only a verified payload is worth reading: what it says is the signer's word.
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return Key{}, fmt.Sprintf("%s by key '%s': payload is not cosign's simple signing JSON: %v", which, signer.Name, err)
	}
	if p.Critical.Type != cosignPayloadType {
		return Key{}, fmt.Sprintf("%s by key '%s': payload type %q, want %q", which, signer.Name, p.Critical.Type, cosignPayloadType)
	}
	if p.Critical.Image.DockerManifestDigest != digest.String() {
		return Key{}, fmt.Sprintf("%s by key '%s' is for %s, not %s", which, signer.Name, p.Critical.Image.DockerManifestDigest, digest)
	}
	return *signer, ""
}

// readBlob reads a blob of at most max bytes and checks it against its digest.
func readBlob(ctx context.Context, repo name.Repository, d v1.Hash, max int64, opts []remote.Option) ([]byte, error) {
	l, err := remote.Layer(repo.Digest(d.String()), append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("blob %s: over %d bytes", d, max)
	}
	sum := sha256.Sum256(data)
	if d.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != d.Hex {
		return nil, fmt.Errorf("blob %s: content has digest sha256:%x", d, sum)
	}
	return data, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}
