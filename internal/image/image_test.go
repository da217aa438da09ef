package image

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fakeBinary is a file standing in for flotilla: Build copies bytes and takes the stamp from
// Binary, so its tests need no Go build.
func fakeBinary(t *testing.T, content string) Binary {
	t.Helper()
	p := filepath.Join(t.TempDir(), "flotilla")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return Binary{
		Path:     p,
		Arch:     "amd64",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Time:     time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

// entry is a layer entry as a user listing the image would see it.
type entry struct {
	mode     int64
	uid, gid int
	typ      byte
	data     string
	modTime  time.Time
}

func layerEntries(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{mode: h.Mode, uid: h.Uid, gid: h.Gid, typ: h.Typeflag, data: string(data), modTime: h.ModTime}
	}
}

func TestImageContents(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, "#!fake flotilla")
	ca := writeCA(t, 2)
	for _, tc := range []struct {
		name     string
		caBundle string
	}{{"with CA bundle", ca}, {"without CA bundle", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Build(bin, Options{Version: "v0.1.0", CABundle: tc.caBundle})
			if err != nil {
				t.Fatal(err)
			}
			files := layerEntries(t, img)
			exe := files["flotilla"]
			if exe.typ != tar.TypeReg || exe.mode != 0o755 || exe.data != "#!fake flotilla" || exe.uid != 0 {
				t.Errorf("/flotilla: type %c mode %o uid %d content %q; want a root-owned 0755 file with the binary", exe.typ, exe.mode, exe.uid, exe.data)
			}
			if tmp := files["tmp"]; tmp.typ != tar.TypeDir || tmp.mode != 0o1777 {
				t.Errorf("/tmp: type %c mode %o, want a 1777 directory", tmp.typ, tmp.mode)
			}
			if home := files["home/flotilla"]; home.typ != tar.TypeDir || home.uid != UID || home.gid != GID {
				t.Errorf("/home/flotilla: type %c owner %d:%d, want a directory of %d:%d", home.typ, home.uid, home.gid, UID, GID)
			}
			if !strings.Contains(files["etc/passwd"].data, "\nflotilla:x:65532:65532:") {
				t.Errorf("/etc/passwd has no user 65532: %q", files["etc/passwd"].data)
			}
			if !strings.Contains(files["etc/group"].data, "\nflotilla:x:65532:") {
				t.Errorf("/etc/group has no group 65532: %q", files["etc/group"].data)
			}
			for name, e := range files {
				if strings.HasPrefix(name, "bin") || strings.HasPrefix(name, "usr") || strings.HasPrefix(name, "sbin") || strings.HasPrefix(name, "var/lib") {
					t.Errorf("layer has %s: the image should hold no shell nor package manager", name)
				}
				if e.typ == tar.TypeSymlink || e.typ == tar.TypeLink {
					t.Errorf("layer has link %s", name)
				}
				if !e.modTime.Equal(bin.Time) {
					t.Errorf("%s: modified %s, want the commit's time %s", name, e.modTime, bin.Time)
				}
			}
			caFile, hasCA := files[CABundlePath]
			if want := tc.caBundle != ""; hasCA != want {
				t.Errorf("CA bundle in the image: %v, want %v", hasCA, want)
			}
			if hasCA {
				want, _ := os.ReadFile(tc.caBundle)
				if caFile.data != string(want) || caFile.mode != 0o644 {
					t.Errorf("CA bundle: mode %o, %d bytes; want 0644 and the %d bytes of %s", caFile.mode, len(caFile.data), len(want), tc.caBundle)
				}
			}

			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/flotilla"}) || c.WorkingDir != "/" || len(c.Env) != 0 || len(c.Cmd) != 0 {
				t.Errorf("config: user %q entrypoint %q workdir %q env %q cmd %q; want 65532:65532, [/flotilla], /, none, none", c.User, c.Entrypoint, c.WorkingDir, c.Env, c.Cmd)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(bin.Time) {
				t.Errorf("config: %s/%s created %s, want linux/amd64 created %s", cf.OS, cf.Architecture, cf.Created, bin.Time)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.source":   Source,
				"org.opencontainers.image.revision": bin.Revision,
				"org.opencontainers.image.version":  "v0.1.0",
				"org.opencontainers.image.created":  "2026-11-30T12:00:00Z",
			}
			for k, v := range wantLabels {
				if c.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
				}
			}
			if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
			}
		})
	}
}

func TestBuildIsReproducible(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, strings.Repeat("flotilla", 4096))
	ca := writeCA(t, 1)
	ref := name.MustParseReference(Repository + ":v0.1.0").(name.Tag)
	digestOf := func(b Binary, version string) (v1.Hash, []byte) {
		img, err := Build(b, Options{Version: version, CABundle: ca})
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "image")
		if err := Write(dir, FormatLayout, ref, img); err != nil {
			t.Fatal(err)
		}
		index, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		d, err := loaded.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if built, _ := img.Digest(); built != d {
			t.Errorf("layout holds %s, built %s", d, built)
		}
		return d, index
	}
	first, firstIndex := digestOf(bin, "v0.1.0")
	second, secondIndex := digestOf(bin, "v0.1.0")
	if first != second || !bytes.Equal(firstIndex, secondIndex) {
		t.Errorf("two builds of one binary: %s and %s (index.json equal: %v); want one digest", first, second, bytes.Equal(firstIndex, secondIndex))
	}
	// The digest follows the inputs: another commit time or version is another image.
	later := bin
	later.Time = bin.Time.Add(time.Hour)
	if d, _ := digestOf(later, "v0.1.0"); d == first {
		t.Errorf("a later commit time gave the same digest %s", d)
	}
	if d, _ := digestOf(bin, "v0.1.1"); d == first {
		t.Errorf("another version gave the same digest %s", d)
	}
}

func TestWriteAndLoad(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, "flotilla")
	img, err := Build(bin, Options{Version: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	ref := name.MustParseReference(Repository + ":v0.1.0").(name.Tag)

	t.Run("tarball", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "sub", "flotilla.tar")
		if err := Write(file, FormatTarball, ref, img); err != nil {
			t.Fatal(err)
		}
		loaded, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := layerEntries(t, loaded)["flotilla"].data; got != "flotilla" {
			t.Errorf("/flotilla from the tarball: %q", got)
		}
		wantCfg, _ := img.ConfigName()
		if got, _ := loaded.ConfigName(); got != wantCfg {
			t.Errorf("tarball config %s, built %s", got, wantCfg)
		}
	})
	t.Run("layout ref names", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "image")
		if err := Write(dir, FormatLayout, ref, img); err != nil {
			t.Fatal(err)
		}
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := idx.IndexManifest()
		if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
			t.Fatalf("index: %+v, want one manifest %s", m.Manifests, want)
		}
		// Readable by any user, executable by none, whatever the library's temporary files had.
		if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			st, _ := d.Info()
			if want := fs.FileMode(0o644); !d.IsDir() && st.Mode().Perm() != want {
				t.Errorf("%s: mode %o, want %o", p, st.Mode().Perm(), want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		a := m.Manifests[0].Annotations
		if a["org.opencontainers.image.ref.name"] != "v0.1.0" || a["io.containerd.image.name"] != Repository+":v0.1.0" {
			t.Errorf("annotations %v, want ref.name v0.1.0 and the full name", a)
		}
	})

	refusals := []struct {
		name, want string
		run        func(t *testing.T) error
	}{
		{"non-empty layout directory", "directory is not empty", func(t *testing.T) error {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "stale"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return Write(dir, FormatLayout, ref, img)
		}},
		{"unknown format", `image format "docker": want oci-layout or tarball`, func(t *testing.T) error {
			return Write(filepath.Join(t.TempDir(), "x"), "docker", ref, img)
		}},
		{"layout with two images", "holds 2 images, want exactly one", func(t *testing.T) error {
			dir := filepath.Join(t.TempDir(), "image")
			if err := Write(dir, FormatLayout, ref, img); err != nil {
				t.Fatal(err)
			}
			other, _ := random.Image(64, 1)
			p, _ := layout.FromPath(dir)
			if err := p.AppendImage(other); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			return err
		}},
		{"missing source", "no such file", func(t *testing.T) error {
			_, err := Load(filepath.Join(t.TempDir(), "nothing"))
			return err
		}},
		{"file that is no tarball", "image tarball", func(t *testing.T) error {
			f := filepath.Join(t.TempDir(), "x.tar")
			if err := os.WriteFile(f, []byte("not a tar"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(f)
			return err
		}},
		{"no version", "no version", func(t *testing.T) error {
			_, err := Build(bin, Options{})
			return err
		}},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			err := r.run(t)
			if err == nil || !strings.Contains(err.Error(), r.want) {
				t.Errorf("error %v, want one containing %q", err, r.want)
			}
		})
	}
}

func TestCABundleRefusals(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, "flotilla")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.pem"), "no such file or directory (name another with --ca-bundle FILE, or none with --ca-bundle \"\")"},
		{"empty", write("empty.pem", nil), "no certificates"},
		{"not PEM", write("text.pem", []byte("hello\n")), "not PEM"},
		{"private key", write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})), `block 1 is a "EC PRIVATE KEY", want only CERTIFICATE blocks`},
		{"broken certificate", write("broken.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})), "certificate 1:"},
		{"too large", write("big.pem", bytes.Repeat([]byte("a"), MaxCABundleSize+1)), "more than 4194304 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(bin, Options{Version: "v0.1.0", CABundle: tc.path})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// writeCA writes a PEM bundle of n self-signed CA certificates.
func writeCA(t *testing.T, n int) string {
	t.Helper()
	var buf bytes.Buffer
	for i := range n {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(int64(i + 1)),
			Subject:               pkix.Name{CommonName: "test CA"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAgentImage: the agent's binary is /flotilla-agent and the entrypoint, with nothing of
// the CLI's; a main package whose name is no program name is refused.
func TestAgentImage(t *testing.T) {
	t.Parallel()
	bin := fakeBinary(t, "#!fake agent")
	bin.Program = "flotilla-agent"
	img, err := Build(bin, Options{Version: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	files := layerEntries(t, img)
	if files["flotilla-agent"].data != "#!fake agent" || files["flotilla"].typ != 0 {
		t.Errorf("layer: flotilla-agent %+v, flotilla %+v; want the agent's binary alone", files["flotilla-agent"], files["flotilla"])
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/flotilla-agent"}) || cf.Config.Labels["org.opencontainers.image.title"] != "flotilla-agent" {
		t.Errorf("entrypoint %q, title %q; want /flotilla-agent", cf.Config.Entrypoint, cf.Config.Labels["org.opencontainers.image.title"])
	}
	bin.Program = "../etc/passwd"
	if _, err := Build(bin, Options{Version: "v0.1.0"}); err == nil || !strings.Contains(err.Error(), "not a program name") {
		t.Errorf("a main package named %q: %v, want a refusal", bin.Program, err)
	}
}
