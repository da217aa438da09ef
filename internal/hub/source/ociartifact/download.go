package ociartifact

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla/flotilla/internal/artifact"
)

// The layer media types of the artifacts accepted: what `flux push artifact` writes, and what
// `oras push` writes for a directory (tar+gzip) or a file (tar, the default for a file; the
// file may itself be a .tar.gz).
const (
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
)

var layerMediaTypes = []types.MediaType{FluxContentMediaType, types.OCILayer, types.OCIUncompressedLayer, types.DockerLayer}

// download reads the manifest of c, checks it is an artifact of one accepted layer, reads the
// layer (bounded, checked against its digest) and unpacks it into dst (bounded, no path out
// of dst, no devices).
func (f *Fetcher) download(ctx context.Context, t *target, c candidate, dst string) error {
	desc, err := remote.Get(t.repo.Digest(c.digest.String()), append(t.opts, remote.WithContext(ctx))...)
	if err != nil {
		return t.errorf("%s: read manifest: %v", c.revision, err)
	}
	layer, err := artifactLayer(desc)
	if err != nil {
		return t.errorf("%s: %v", c.revision, err)
	}
	if layer.Size > f.opts.MaxLayerBytes {
		return t.errorf("%s: layer %s of %d bytes is over the limit of %d bytes", c.revision, layer.Digest, layer.Size, f.opts.MaxLayerBytes)
	}
	// The layer goes to a file beside dst first: nothing is unpacked before the whole layer
	// has been checked against its digest.
	tmp, err := os.CreateTemp(filepath.Dir(dst), "oci-layer-")
	if err != nil {
		return t.errorf("%s: %v", c.revision, err)
	}
	defer os.Remove(tmp.Name())
	defer func() { _ = tmp.Close() }() // only read back after the checked write
	if err := f.readLayer(ctx, t, layer, tmp); err != nil {
		return t.errorf("%s: layer %s: %v", c.revision, layer.Digest, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return t.errorf("%s: %v", c.revision, err)
	}
	if err := unpack(ctx, tmp, dst, f.opts.Unpack); err != nil {
		return t.errorf("%s: layer %s: %v", c.revision, layer.Digest, err)
	}
	return nil
}

// artifactLayer checks the manifest is one artifact: an image manifest (OCI or Docker) with
// exactly one layer of an accepted media type.
func artifactLayer(desc *remote.Descriptor) (v1.Descriptor, error) {
	switch desc.MediaType {
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
	case types.OCIImageIndex, types.DockerManifestList:
		return v1.Descriptor{}, fmt.Errorf("%s is an index of several manifests (%s), not an artifact: push the manifests with flux push artifact or oras push", desc.Digest, desc.MediaType)
	default:
		return v1.Descriptor{}, fmt.Errorf("%s has media type %q, not an OCI image manifest", desc.Digest, desc.MediaType)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	if len(m.Layers) != 1 {
		return v1.Descriptor{}, fmt.Errorf("manifest %s has %d layers: an artifact has exactly one (a tar.gz of the manifests, as flux push artifact and oras push write it)", desc.Digest, len(m.Layers))
	}
	l := m.Layers[0]
	for _, mt := range layerMediaTypes {
		if l.MediaType == mt {
			return l, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("manifest %s: layer %s has media type %q; accepted: %s, %s, %s", desc.Digest, l.Digest, l.MediaType, FluxContentMediaType, types.OCILayer, types.OCIUncompressedLayer)
}

// readLayer copies the layer into w, at most MaxLayerBytes, and checks its digest.
func (f *Fetcher) readLayer(ctx context.Context, t *target, l v1.Descriptor, w io.Writer) error {
	if l.Digest.Algorithm != "sha256" {
		return fmt.Errorf("digest algorithm %s is not supported", l.Digest.Algorithm)
	}
	rl, err := remote.Layer(t.repo.Digest(l.Digest.String()), append(t.opts, remote.WithContext(ctx))...)
	if err != nil {
		return err
	}
	rc, err := rl.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(rc, f.opts.MaxLayerBytes+1))
	if err != nil {
		return err
	}
	if n > f.opts.MaxLayerBytes {
		return fmt.Errorf("over the limit of %d bytes", f.opts.MaxLayerBytes)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != l.Digest.Hex {
		return fmt.Errorf("content has digest sha256:%s", got)
	}
	return nil
}

// unpack unpacks a tar.gz, or a plain tar (oras's default media type for a file), with the
// hardened unpacker agents use for artifacts: bounded files and bytes, no absolute or ".."
// paths, no symlink out of the tree, no devices or hard links.
func unpack(ctx context.Context, r io.Reader, dst string, lim artifact.Limits) error {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return artifact.Unpack(ctx, br, dst, lim)
	}
	// A plain tar: compress it on the way, so that one unpacker with its bounds reads both.
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := io.Copy(zw, br)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	err := artifact.Unpack(ctx, pr, dst, lim)
	_ = pr.Close() // stops the compressor when Unpack gave up early
	return err
}
