// This file turns a release's Helm settings, as an assignment carries them, into the options
// the renderer takes, reading its values and patch files from their artifacts: for the agent
// and the renders outside it (the hub's plan, the fleet simulator). It also reads a file
// inside an artifact and tells a chart directory.

package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/flotilla/flotilla/internal/desired"
)

// MaxHelmFileBytes bounds one values or patch file read from an artifact; the renderer bounds all
// values together.
const MaxHelmFileBytes = 4 << 20

// HelmOptions returns the render options of an assignment, or nil when its path in root is
// not a chart and it has no Helm settings: the one place that turns Helm settings into render
// options, for the agent and the hub's renders alike. The caller adds the cluster's
// capabilities (the hub, which reads no cluster, renders with Helm's defaults).
func HelmOptions(ctx context.Context, as desired.Assignment, root string, dir func(context.Context, string) (string, error)) (*Helm, error) {
	if !IsChart(root, as.Path) {
		if as.Helm != nil {
			return nil, fmt.Errorf("release %q has Helm settings but its path %q at revision %s is not a chart (it holds no Chart.yaml)", as.Release, as.Path, as.Revision)
		}
		return nil, nil
	}
	h := &Helm{ReleaseName: as.Release, Namespace: as.Namespace, IncludeCRDs: true}
	if h.Namespace == "" {
		h.Namespace = "default"
	}
	hr := as.Helm
	if hr == nil {
		return h, nil
	}
	if hr.ReleaseName != "" {
		h.ReleaseName = hr.ReleaseName
	}
	h.IncludeCRDs = hr.IncludeCRDs
	if len(hr.Values) > 0 {
		data, err := json.Marshal(hr.Values)
		if err != nil {
			return nil, fmt.Errorf("release %q: helm values: %w", as.Release, err)
		}
		h.Values = data
	}
	read := func(what string, f desired.FileRef) ([]byte, error) {
		root, err := dir(ctx, f.Digest)
		if err == nil {
			var data []byte
			if data, err = ReadArtifactFile(root, f.Path, MaxHelmFileBytes); err == nil {
				return data, nil
			}
		}
		return nil, fmt.Errorf("%s %q of source %q at revision %s: %w", what, f.Path, f.Source, f.Revision, err)
	}
	for _, f := range hr.ValuesFiles {
		data, err := read("values file", f)
		if err != nil {
			return nil, err
		}
		h.ValuesFiles = append(h.ValuesFiles, ValuesFile{Name: HelmFileName(f.Source, f.Path), Data: data})
	}
	for i, p := range hr.PostRender {
		patch := Patch{Name: fmt.Sprintf("postRender patch %d", i+1), Patch: []byte(p.Patch)}
		if f := p.File; f != nil {
			data, err := read("postRender patch file", *f)
			if err != nil {
				return nil, err
			}
			patch.Name, patch.Patch = HelmFileName(f.Source, f.Path), data
		}
		if t := p.Target; t != nil {
			patch.Target = &PatchTarget{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		h.PostRender = append(h.PostRender, patch)
	}
	return h, nil
}

// HelmFileName names a file of a source for errors and the renderer: "SOURCE:PATH".
func HelmFileName(source, path string) string { return source + ":" + path }

// ReadArtifactFile reads the regular file rel inside root, refusing a path or a symbolic link that
// leads out of root, and a file over max bytes.
func ReadArtifactFile(root, rel string, max int64) ([]byte, error) {
	clean := path.Clean(filepath.ToSlash(rel))
	if rel == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, errors.New("not a path inside the source")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only: Close has nothing to flush
	f, err := r.Open(filepath.FromSlash(clean))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file in the source")
		}
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than the limit of %d bytes", max)
	}
	return data, nil
}

// IsChart reports whether dir (inside root) holds a chart's Chart.yaml, as the renderer
// decides it.
func IsChart(root, dir string) bool {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false
	}
	defer func() { _ = r.Close() }() // read only: Close has nothing to flush
	clean := path.Clean(filepath.ToSlash(dir))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return false // the renderer refuses such a path
	}
	st, err := r.Stat(filepath.FromSlash(path.Join(clean, "Chart.yaml")))
	return err == nil && st.Mode().IsRegular()
}
