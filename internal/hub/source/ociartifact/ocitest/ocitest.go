// Package ocitest pushes and signs OCI artifacts for tests, with the real tools: artifacts
// as `oras push` and `flux push artifact` write them (through the oras-go library the oras
// CLI is built on), signatures by the real cosign CLI (bin/cosign, built by `make bin/cosign`
// from tools/cosign). Only tests import it.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/flotilla/flotilla/internal/registrytest"
	"github.com/flotilla/flotilla/internal/toolbin"
)

// Password protects the cosign private keys the tests generate.
const Password = "test-password"

// Cosign is the path of bin/cosign, found in bin/ of the working directory or a parent. The
// test fails when it is missing, saying how to build it.
func Cosign(t testing.TB) string {
	t.Helper()
	return toolbin.Path(t, "cosign")
}

// isRoot reports whether d is the main module's root (not a nested tools/ module).
// RunCosign runs cosign with args in dir, trusting the registry's certificate, with the key
// password in its environment and a home of its own. It returns the combined output.
func RunCosign(t testing.TB, reg *registrytest.Registry, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Cosign(t), args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "COSIGN_PASSWORD=" + Password, "TUF_ROOT=" + filepath.Join(home, "tuf")}
	if reg != nil && reg.CAFile != "" {
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+reg.CAFile)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// KeyPair is a cosign key pair on disk.
type KeyPair struct{ Private, Public string }

// GenerateKeyPair runs `cosign generate-key-pair` in a new directory.
func GenerateKeyPair(t testing.TB) KeyPair {
	t.Helper()
	dir := t.TempDir()
	if out, err := RunCosign(t, nil, dir, "generate-key-pair"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	return KeyPair{Private: filepath.Join(dir, "cosign.key"), Public: filepath.Join(dir, "cosign.pub")}
}

// ImportKeyPair runs `cosign import-key-pair` on a PEM private key (PKCS #8, PKCS #1 or EC),
// for keys cosign does not generate itself (RSA, Ed25519).
func ImportKeyPair(t testing.TB, pemKey []byte) KeyPair {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := RunCosign(t, nil, dir, "import-key-pair", "--key", "key.pem"); err != nil {
		t.Fatalf("cosign import-key-pair: %v\n%s", err, out)
	}
	return KeyPair{Private: filepath.Join(dir, "import-cosign.key"), Public: filepath.Join(dir, "import-cosign.pub")}
}

// Sign signs reg.Host/repo@digest with the key pair, the key-based way an air-gapped site
// does: no transparency log.
func Sign(t testing.TB, reg *registrytest.Registry, kp KeyPair, repo, dgst string) {
	t.Helper()
	ref := reg.Host + "/" + repo + "@" + dgst
	args := []string{"sign", "--key", kp.Private, "--tlog-upload=false", "--yes", ref}
	if reg.CAFile == "" {
		args = append(args, "--allow-insecure-registry") // a plain-HTTP registry
	}
	if out, err := RunCosign(t, reg, t.TempDir(), args...); err != nil {
		t.Fatalf("cosign sign %s: %v\n%s", ref, err, out)
	}
}

func repository(t testing.TB, reg *registrytest.Registry, repo string, cred auth.Credential) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(reg.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = reg.CAFile == ""
	r.Client = &auth.Client{Client: reg.Client, Credential: auth.StaticCredential(reg.Host, cred)}
	return r
}

// Push is how an artifact is pushed.
type Push struct {
	// Credential for a registry with users.
	Credential auth.Credential
}

// PushOras pushes dir as `oras push HOST/REPO:TAG DIR` does: the oras-go file store packs
// the directory as one tar+gzip layer (entries under the directory's name, the name in the
// title annotation), in an OCI 1.1 manifest of the default artifact type. It returns the
// manifest digest.
func PushOras(t testing.TB, reg *registrytest.Registry, repo, tag, dir string, p Push) string {
	t.Helper()
	ctx := context.Background()
	fs, err := file.New(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fs.Close() }() // removes the store's temporary files: best effort
	layer, err := fs.Add(ctx, filepath.Base(dir), "", dir)
	if err != nil {
		t.Fatalf("oras file store add %s: %v", dir, err)
	}
	m, err := oras.PackManifest(ctx, fs, oras.PackManifestVersion1_1, "application/vnd.unknown.artifact.v1", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Tag(ctx, m, tag); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(ctx, fs, tag, repository(t, reg, repo, p.Credential), tag, oras.DefaultCopyOptions); err != nil {
		t.Fatalf("oras push %s/%s:%s: %v", reg.Host, repo, tag, err)
	}
	return m.Digest.String()
}

// PushFlux pushes files as `flux push artifact` does: one layer of media type
// application/vnd.cncf.flux.content.v1.tar+gzip holding the files at the root, a config of
// media type application/vnd.cncf.flux.config.v1+json, and the source annotations.
func PushFlux(t testing.TB, reg *registrytest.Registry, repo, tag string, files map[string]string, p Push) string {
	t.Helper()
	return PushLayer(t, reg, repo, tag, "application/vnd.cncf.flux.content.v1.tar+gzip", TarGz(t, files), p)
}

// PushLayer pushes an artifact of one layer with the given media type and content, in the
// flux shape (config application/vnd.cncf.flux.config.v1+json).
func PushLayer(t testing.TB, reg *registrytest.Registry, repo, tag, mediaType string, content []byte, p Push) string {
	t.Helper()
	return PushLayers(t, reg, repo, tag, p, Layer{MediaType: mediaType, Content: content})
}

// Layer is a layer to push.
type Layer struct {
	MediaType string
	Content   []byte
}

// PushLayers pushes a manifest of the given layers (any number, for the refusals).
func PushLayers(t testing.TB, reg *registrytest.Registry, repo, tag string, p Push, layers ...Layer) string {
	t.Helper()
	ctx := context.Background()
	store := memory.New()
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := store.Push(ctx, d, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	config := push("application/vnd.cncf.flux.config.v1+json", []byte("{}"))
	var descs []ocispec.Descriptor
	for _, l := range layers {
		descs = append(descs, push(l.MediaType, l.Content))
	}
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config,
		Layers:    descs,
		Annotations: map[string]string{
			"org.opencontainers.image.source":   "https://github.com/example/fleet",
			"org.opencontainers.image.revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
			"org.opencontainers.image.created":  "2026-12-01T00:00:00Z",
		},
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	md := push(ocispec.MediaTypeImageManifest, data)
	if err := store.Tag(ctx, md, tag); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(ctx, store, tag, repository(t, reg, repo, p.Credential), tag, oras.DefaultCopyOptions); err != nil {
		t.Fatalf("push %s/%s:%s: %v", reg.Host, repo, tag, err)
	}
	return md.Digest.String()
}

// TarGz is a tar.gz of files (name to content), directories created as needed.
func TarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var entries []tar.Header
	for _, name := range slices.Sorted(maps.Keys(files)) { // one digest for one content
		entries = append(entries, tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))})
	}
	return TarGzEntries(t, entries, files)
}

// TarGzEntries is a tar.gz of the given headers, each regular file's content taken from
// contents by name: for hostile archives (traversal, symlinks out, devices).
func TarGzEntries(t testing.TB, hdrs []tar.Header, contents map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range hdrs {
		h := h
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(contents[h.Name])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
