package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Formats Write knows.
const (
	FormatLayout  = "oci-layout"
	FormatTarball = "tarball"
)

// Write stores img at path, named ref: an OCI image layout directory (which must not exist or
// be empty, so that a stale image is never mixed in) or a docker-archive tarball (`docker
// load`, `podman load`, `crane push`).
func Write(path, format string, ref name.Tag, img v1.Image) error {
	switch format {
	case FormatLayout:
		if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
			return fmt.Errorf("image layout %s: directory is not empty; remove it first", path)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("image layout %s: %w", path, err)
		}
		p, err := layout.Write(path, empty.Index)
		if err != nil {
			return fmt.Errorf("image layout %s: %w", path, err)
		}
		// ref.name is the tag alone (as the OCI spec and skopeo read it); containerd's
		// annotation carries the whole name.
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref.TagStr(),
			"io.containerd.image.name":          ref.Name(),
		})); err != nil {
			return fmt.Errorf("image layout %s: %w", path, err)
		}
		return normalizeModes(path)
	case FormatTarball:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("image tarball %s: %w", path, err)
		}
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return fmt.Errorf("image tarball %s: %w", path, err)
		}
		return nil
	default:
		return fmt.Errorf("image format %q: want %s or %s", format, FormatLayout, FormatTarball)
	}
}

// Load reads an image Write stored: from a layout directory (which must hold exactly one
// image) or a tarball.
func Load(path string) (v1.Image, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	if !st.IsDir() {
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			return nil, fmt.Errorf("image tarball %s: %w", path, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", path, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", path, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("image layout %s: holds %d images, want exactly one", path, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", path, err)
	}
	return img, nil
}

// normalizeModes makes the layout readable by anyone and executable by no one: the library
// writes blobs 0600 through temporary files and index.json 0755, so a layout built by one
// user (root in CI) could not be pushed by another.
func normalizeModes(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("image layout %s: %w", root, err)
		}
		return nil
	})
}
