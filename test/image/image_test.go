// Package image tests the static image build end to end, once per run: `make test-image` builds
// flotilla as `make image` does and hands it to the test through FLOTILLA_IMAGE_BIN.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla/flotilla/internal/registrytest"
	"github.com/flotilla/flotilla/internal/testbin"
)

// TestImageFromRegistry is issue 16's image check, end to end and without Docker: take the
// static flotilla `make test-image` built the way `make image` does (VERSION=v0.0.0-e2e), build its image twice (one digest), push it with
// `flotilla image push` and docker login's credentials to a real registry (CNCF distribution,
// over TLS, with a user), pull it back by
// digest, take /flotilla out of the pulled layer and run it: it reports the commit it was
// built from, and the image runs as a non-root user with no shell.
func TestImageFromRegistry(t *testing.T) {
	work := t.TempDir()
	bin := testbin.PathFrom(t, "FLOTILLA_IMAGE_BIN", "flotilla", "make test-image")
	var built struct {
		Version, Commit string
	}
	imageRunJSON(t, &built, bin, "version", "-o", "json")
	if len(built.Commit) != 40 {
		t.Fatalf("static flotilla reports commit %q: is it stamped?", built.Commit)
	}

	type result struct{ Reference, Digest, Revision string }
	var first, second result
	imageRunJSON(t, &first, bin, "image", "build", "--dest", filepath.Join(work, "image1"), "-o", "json")
	imageRunJSON(t, &second, bin, "image", "build", "--dest", filepath.Join(work, "image2"), "-o", "json")
	if first.Digest == "" || first.Digest != second.Digest {
		t.Errorf("two builds of one binary: %s and %s, want one digest", first.Digest, second.Digest)
	}
	if first.Reference != "ghcr.io/flotilla/flotilla:v0.0.0-e2e" || first.Revision != built.Commit {
		t.Errorf("built %s from %s, want ghcr.io/flotilla/flotilla:v0.0.0-e2e from %s", first.Reference, first.Revision, built.Commit)
	}

	reg := registrytest.Start(t, registrytest.Options{TLS: true, Users: map[string]string{"ci": "s3cret"}})
	target := reg.Host + "/flotilla/flotilla:v0.0.0-e2e"
	// What docker login (or podman login) leaves behind, and the user's way to trust a
	// registry's private CA.
	dockerConfig := filepath.Join(work, "docker")
	if err := os.MkdirAll(dockerConfig, 0o700); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CAFile, "REGISTRY_AUTH_FILE=", "XDG_RUNTIME_DIR="+work)

	anonymous := exec.Command(bin, "image", "push", filepath.Join(work, "image1"), target)
	anonymous.Env = append(slices.Clip(env), "DOCKER_CONFIG="+filepath.Join(work, "nobody"))
	if out, err := anonymous.CombinedOutput(); err == nil || !strings.Contains(string(out), "401 Unauthorized") {
		t.Errorf("push without credentials: %v, %s; want a refusal with 401 Unauthorized", err, out)
	}
	push := exec.Command(bin, "image", "push", filepath.Join(work, "image1"), target, "-o", "json")
	push.Env = append(slices.Clip(env), "DOCKER_CONFIG="+dockerConfig)
	var pushed result
	imageDecode(t, push, &pushed)
	if pushed.Digest != first.Digest {
		t.Errorf("pushed %s, built %s", pushed.Digest, first.Digest)
	}

	ref, err := name.NewDigest(reg.Host + "/flotilla/flotilla@" + pushed.Digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithTransport(reg.Client.Transport), remote.WithContext(t.Context()),
		remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"}))
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/flotilla" {
		t.Errorf("pulled config: user %q entrypoint %q, want 65532:65532 and /flotilla", cf.Config.User, cf.Config.Entrypoint)
	}
	if rev := cf.Config.Labels["org.opencontainers.image.revision"]; rev != built.Commit {
		t.Errorf("revision label %q, want %s", rev, built.Commit)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("pulled image: %d layers, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	extracted := filepath.Join(t.TempDir(), "flotilla")
	names := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read pulled layer: %v", err)
		}
		names[strings.TrimSuffix(h.Name, "/")] = true
		if h.Name == "flotilla" {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(extracted, data, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if names[shell] {
			t.Errorf("the image has a shell: /%s", shell)
		}
	}
	if !names["etc/ssl/certs/ca-certificates.crt"] || !names["tmp"] {
		t.Errorf("the image lacks the CA bundle or /tmp: %v", names)
	}
	want, _ := os.ReadFile(bin)
	got, _ := os.ReadFile(extracted)
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("/flotilla from the pulled layer (%d bytes) is not the binary built (%d bytes)", len(got), len(want))
	}
	var pulled struct{ Version, Commit string }
	imageRunJSON(t, &pulled, extracted, "version", "-o", "json")
	if pulled.Commit != built.Commit || pulled.Version != "v0.0.0-e2e" {
		t.Errorf("the pulled flotilla is %s at %s, want v0.0.0-e2e at %s", pulled.Version, pulled.Commit, built.Commit)
	}
	if err := exec.Command("git", "cat-file", "-e", pulled.Commit+"^{commit}").Run(); err != nil {
		t.Errorf("commit %s is not in this repository: %v", pulled.Commit, err)
	}
}

func imageRunJSON(t *testing.T, v any, bin string, args ...string) {
	t.Helper()
	imageDecode(t, exec.Command(bin, args...), v)
}

func imageDecode(t *testing.T, cmd *exec.Cmd, v any) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%s: output %q: %v", strings.Join(cmd.Args, " "), out, err)
	}
}
