// Package image builds flotilla's container image without Docker: one layer holding the
// static binary, the passwd and group entries of a non-root user, /tmp and (optionally) a CA
// bundle; no shell, no package manager. The image is a function of its inputs: two builds of
// one commit give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// UID and GID of the user the image runs as (the deploy manifests' runAsUser), the
	// number distroless images use for "nonroot".
	UID = 65532
	GID = 65532
	// Repository is the name the deploy manifests pull for the hub; AgentRepository for
	// agents. The tag is the release.
	Repository      = "ghcr.io/flotilla/flotilla"
	AgentRepository = "ghcr.io/flotilla/flotilla-agent"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/flotilla/flotilla"
	// MaxCABundleSize bounds the CA bundle copied in (Debian's is about 220 KiB).
	MaxCABundleSize = 4 << 20
	// CABundlePath is where Go's crypto/x509 looks first for system roots on Linux.
	CABundlePath = "etc/ssl/certs/ca-certificates.crt"
)

// Options says what goes into the image besides the binary.
type Options struct {
	// Version is the release (org.opencontainers.image.version label), e.g. v0.1.0.
	Version string
	// CABundle is a PEM file of CA certificates copied to /etc/ssl/certs/ca-certificates.crt,
	// for the hub's HTTPS Git and OIDC requests; empty leaves it out.
	CABundle string
}

// RepositoryFor is the repository of program's image: ghcr.io/flotilla/PROGRAM.
func RepositoryFor(program string) string { return "ghcr.io/flotilla/" + programOf(program) }

func programOf(program string) string {
	if program == "" {
		return "flotilla"
	}
	return program
}

// programName is what a program's name may be: the image's only file at its root.
var programName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Build assembles the image for bin.
func Build(bin Binary, opts Options) (v1.Image, error) {
	if opts.Version == "" {
		return nil, fmt.Errorf("image for %s: no version", bin.Path)
	}
	program := programOf(bin.Program)
	if !programName.MatchString(program) {
		return nil, fmt.Errorf("image for %s: its main package is %q, not a program name", bin.Path, program)
	}
	layerTar, err := buildLayer(bin, opts)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("image layer for %s: %w", bin.Path, err)
	}
	created := v1.Time{Time: bin.Time}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "flotilla image build",
			Comment:   programOf(bin.Program) + " " + opts.Version + " (" + bin.Revision + ")",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image for %s: %w", bin.Path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config for %s: %w", bin.Path, err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = bin.Arch
	cf.OS = "linux"
	cf.Created = created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{"/" + program},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.revision": bin.Revision,
			"org.opencontainers.image.version":  opts.Version,
			"org.opencontainers.image.created":  bin.Time.Format(time.RFC3339),
			"org.opencontainers.image.title":    program,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image config for %s: %w", bin.Path, err)
	}
	return img, nil
}

// file is one entry of the layer.
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
	dir      bool
}

// buildLayer writes the layer's tar in a fixed order with fixed owners and the commit's time
// on every entry, so that its bytes depend only on the inputs.
func buildLayer(bin Binary, opts Options) ([]byte, error) {
	exe, err := os.ReadFile(bin.Path)
	if err != nil {
		return nil, fmt.Errorf("image for %s: %w", bin.Path, err)
	}
	if len(exe) > MaxBinarySize {
		return nil, fmt.Errorf("binary %s: %d bytes, more than the %d an image takes", bin.Path, len(exe), MaxBinarySize)
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nflotilla:x:%d:\n", GID))},
		// Go's resolver reads it; without it some libcs' defaults would differ from Go's.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nflotilla:x:%d:%d:flotilla:/home/flotilla:/sbin/nologin\n", UID, GID))},
	}
	if opts.CABundle != "" {
		ca, err := readCABundle(opts.CABundle)
		if err != nil {
			return nil, err
		}
		files = append(files,
			file{name: "etc/ssl/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			file{name: CABundlePath, mode: 0o644, data: ca})
	}
	files = append(files,
		file{name: programOf(bin.Program), mode: 0o755, data: exe},
		file{name: "home/", mode: 0o755, dir: true},
		file{name: "home/flotilla/", mode: 0o700, uid: UID, gid: GID, dir: true},
		file{name: "tmp/", mode: 0o1777, dir: true},
	)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := bin.Time.Truncate(time.Second)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image layer entry %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("image layer entry %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return buf.Bytes(), nil
}

// readCABundle reads a PEM bundle and refuses one that is too large, holds anything but
// certificates, or holds none: a broken bundle would leave the hub without roots and fail
// every HTTPS request later, far from the cause.
func readCABundle(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w (name another with --ca-bundle FILE, or none with --ca-bundle \"\")", err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	data, err := io.ReadAll(io.LimitReader(f, MaxCABundleSize+1))
	if err != nil {
		return nil, fmt.Errorf("CA bundle %s: %w", path, err)
	}
	if len(data) > MaxCABundleSize {
		return nil, fmt.Errorf("CA bundle %s: more than %d bytes", path, MaxCABundleSize)
	}
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 && n == 0 {
				return nil, fmt.Errorf("CA bundle %s: not PEM", path)
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("CA bundle %s: block %d is a %q, want only CERTIFICATE blocks", path, n+1, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("CA bundle %s: certificate %d: %w", path, n+1, err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("CA bundle %s: no certificates", path)
	}
	return data, nil
}
