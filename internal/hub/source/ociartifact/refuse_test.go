package ociartifact

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/hub/source/ociartifact/ocitest"
)

// wantError fails unless err holds every part.
func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q\ndoes not say %q", err, p)
		}
	}
}

// TestSignatureRefusals: an artifact that is not signed as the source says is refused before
// anything is unpacked, naming the source, the keys, the digest and why.
func TestSignatureRefusals(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{})
	other := ocitest.GenerateKeyPair(t)
	push := func(repo, tag string) string {
		return ocitest.PushFlux(t, fx.reg, repo, tag, map[string]string{"deploy.yaml": deployment}, ocitest.Push{})
	}

	t.Run("unsigned", func(t *testing.T) {
		d := push("team/unsigned", "v1")
		dst := emptyDir(t)
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, "team/unsigned", v1alpha1.OCISource{Tag: "v1", Verify: verifyWith("release")}), "", dst)
		wantError(t, err, "source 'app'", "keys 'release'", "no cosign signature found for "+d)
		if files := tree(t, dst); len(files) != 0 {
			t.Errorf("unpacked %v", files)
		}
	})
	t.Run("signed by another key", func(t *testing.T) {
		d := push("team/other-key", "v1")
		ocitest.Sign(t, fx.reg, other, "team/other-key", d)
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, "team/other-key", v1alpha1.OCISource{Tag: "v1", Verify: verifyWith("release")}), "", emptyDir(t))
		wantError(t, err, "source 'app'", d, "signature by key 'release' does not verify: ECDSA signature does not match the payload")
	})
	t.Run("a signature of another digest copied over", func(t *testing.T) {
		// Whoever can push may copy a valid signature of one artifact to the signature tag
		// of another: the signed payload names the first digest, so it is refused.
		signed := push("team/replay", "v1")
		ocitest.Sign(t, fx.reg, fx.kp, "team/replay", signed)
		unsigned := ocitest.PushFlux(t, fx.reg, "team/replay", "v2", map[string]string{"evil.yaml": "kind: ClusterRoleBinding\n"}, ocitest.Push{})
		copySignature(t, fx, "team/replay", signed, unsigned)
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, "team/replay", v1alpha1.OCISource{Tag: "v2", Verify: verifyWith("release")}), "", emptyDir(t))
		wantError(t, err, "by key 'release' is for "+signed+", not "+unsigned)
	})
	t.Run("a key the hub does not have", func(t *testing.T) {
		d := push("team/unknown-key", "v1")
		ocitest.Sign(t, fx.reg, fx.kp, "team/unknown-key", d)
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, "team/unknown-key", v1alpha1.OCISource{Tag: "v1", Verify: verifyWith("release", "team-a")}), "", emptyDir(t))
		wantError(t, err, "source 'app'", "publicKeys names 'team-a', which the hub does not have (configured: 'release'", "--verify-key NAME=FILE")
	})
	t.Run("the tag moves to an unsigned digest", func(t *testing.T) {
		d := push("team/moved", "v1")
		ocitest.Sign(t, fx.reg, fx.kp, "team/moved", d)
		src := ociSource(fx.reg.Host, "team/moved", v1alpha1.OCISource{Tag: "v1", Verify: verifyWith("release")})
		first, err := fx.f.Fetch(t.Context(), src, "", emptyDir(t))
		if err != nil {
			t.Fatal(err)
		}
		moved := ocitest.PushFlux(t, fx.reg, "team/moved", "v1", map[string]string{"deploy.yaml": "kind: Pod\n"}, ocitest.Push{})
		_, err = fx.f.Fetch(t.Context(), src, first.Revision, emptyDir(t))
		wantError(t, err, "source 'app'", "v1@"+moved, "no cosign signature found for "+moved)
	})
}

// copySignature puts the cosign signature manifest of digest from under the signature tag
// of digest to.
func copySignature(t *testing.T, fx *fixture, repo, from, to string) {
	t.Helper()
	r, err := name.NewRepository(fx.reg.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	sigTag := func(d string) name.Tag { return r.Tag(strings.Replace(d, ":", "-", 1) + ".sig") }
	opts := []remote.Option{remote.WithTransport(fx.reg.Client.Transport), remote.WithContext(t.Context())}
	desc, err := remote.Get(sigTag(from), opts...)
	if err != nil {
		t.Fatal(err)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(sigTag(to), img, opts...); err != nil {
		t.Fatal(err)
	}
}

// TestArtifactShapeRefusals: what is not one artifact layer is refused naming the digest.
func TestArtifactShapeRefusals(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{})
	fetch := func(repo string) error {
		_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Tag: "v1"}), "", emptyDir(t))
		return err
	}
	t.Run("an index", func(t *testing.T) {
		idx, err := random.Index(256, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.NewTag(fx.reg.Host + "/team/index:v1")
		if err := remote.WriteIndex(ref, idx, remote.WithTransport(fx.reg.Client.Transport)); err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		wantError(t, fetch("team/index"), d.String()+" is an index of several manifests")
	})
	t.Run("two layers", func(t *testing.T) {
		gz := ocitest.TarGz(t, map[string]string{"a.yaml": deployment})
		d := ocitest.PushLayers(t, fx.reg, "team/two", "v1", ocitest.Push{}, ocitest.Layer{MediaType: FluxContentMediaType, Content: gz}, ocitest.Layer{MediaType: FluxContentMediaType, Content: ocitest.TarGz(t, map[string]string{"b.yaml": deployment})})
		wantError(t, fetch("team/two"), "manifest "+d+" has 2 layers")
	})
	t.Run("an unknown media type", func(t *testing.T) {
		d := ocitest.PushLayer(t, fx.reg, "team/helm", "v1", "application/vnd.cncf.helm.chart.content.v1.tar+gzip", ocitest.TarGz(t, map[string]string{"Chart.yaml": "name: x\n"}), ocitest.Push{})
		wantError(t, fetch("team/helm"), "manifest "+d, `media type "application/vnd.cncf.helm.chart.content.v1.tar+gzip"`)
	})
	t.Run("a plain tar (oras push of a file)", func(t *testing.T) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(&tar.Header{Name: "deploy.yaml", Mode: 0o644, Size: int64(len(deployment)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(deployment)); err != nil {
			t.Fatal(err)
		}
		tw.Close()
		ocitest.PushLayer(t, fx.reg, "team/plain", "v1", "application/vnd.oci.image.layer.v1.tar", buf.Bytes(), ocitest.Push{})
		dst := emptyDir(t)
		if _, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, "team/plain", v1alpha1.OCISource{Tag: "v1"}), "", dst); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, dst); len(got) != 1 || got[0] != "deploy.yaml: "+deployment {
			t.Errorf("unpacked %v", got)
		}
	})
}

// TestLayerBounds: a hostile layer (too big, a bomb, paths out of the tree, devices) is
// refused and nothing is written outside the destination.
func TestLayerBounds(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, Options{MaxLayerBytes: 64 << 10, Unpack: artifact.Limits{MaxBytes: 1 << 20, MaxFiles: 100}})
	random := make([]byte, 128<<10) // incompressible
	rand.Read(random)
	tests := []struct {
		name  string
		layer []byte
		want  string
	}{
		{"a layer over the limit", ocitest.TarGz(t, map[string]string{"big.bin": string(random)}), "over the limit of 65536 bytes"},
		{"a bomb over the uncompressed limit", ocitest.TarGz(t, map[string]string{"zeros.yaml": strings.Repeat("\x00", 2<<20)}), "over the limit of 1048576 bytes"},
		{"too many files", ocitest.TarGz(t, manyFiles(101)), "over the limit of 100 files"},
		{"a path out of the tree", ocitest.TarGzEntries(t, []tar.Header{{Name: "../escape.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}}, map[string]string{"../escape.yaml": "x\n"}), "entry '../escape.yaml': '..' in path"},
		{"an absolute path", ocitest.TarGzEntries(t, []tar.Header{{Name: "/etc/escape.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}}, map[string]string{"/etc/escape.yaml": "x\n"}), "entry '/etc/escape.yaml': absolute path"},
		{"a symlink out of the tree", ocitest.TarGzEntries(t, []tar.Header{{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}}, nil), "points outside the tree"},
		{"a device", ocitest.TarGzEntries(t, []tar.Header{{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, nil), "device and fifo entries are not allowed"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := "team/bounds" + string(rune('a'+i))
			d := ocitest.PushLayer(t, fx.reg, repo, "v1", FluxContentMediaType, tc.layer, ocitest.Push{})
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := fx.f.Fetch(t.Context(), ociSource(fx.reg.Host, repo, v1alpha1.OCISource{Tag: "v1"}), "", dst)
			wantError(t, err, "source 'app'", "v1@"+d, tc.want)
			entries, _ := os.ReadDir(parent)
			if len(entries) != 1 || len(tree(t, dst)) != 0 {
				t.Errorf("after the refusal, %s holds %v and dst %v; want dst alone and empty", parent, entries, tree(t, dst))
			}
		})
	}
}

func manyFiles(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[filepath.Join("d", strings.Repeat("f", 1+i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))+".yaml")] = "x\n"
	}
	return m
}

var _ = context.Background
