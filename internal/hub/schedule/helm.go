package schedule

import (
	"fmt"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Helm is Release.spec.helm with every file it names resolved to an artifact.
type Helm struct {
	ReleaseName string    `json:"releaseName,omitempty"`
	ValuesFiles []FileRef `json:"valuesFiles,omitempty"`
	// Values are the release's inline values as written; the agent substitutes variables.
	Values      map[string]any    `json:"values,omitempty"`
	IncludeCRDs bool              `json:"includeCRDs"`
	PostRender  []PostRenderPatch `json:"postRender,omitempty"`
}

// FileRef is a file in the artifact of a source at the revision the hub resolved.
type FileRef struct {
	Source   string `json:"source"`
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
	Path     string `json:"path"`
}

// PostRenderPatch is a kustomize patch of a chart's output, inline or in File.
type PostRenderPatch struct {
	Patch  string                `json:"patch,omitempty"`
	File   *FileRef              `json:"file,omitempty"`
	Target *v1alpha1.PatchTarget `json:"target,omitempty"`
}

// Digests are every artifact the assignment needs: its own and those of the files its Helm
// settings name (which an agent may therefore download).
func (a Assignment) Digests() []string {
	out := []string{a.Digest}
	if a.Helm == nil {
		return out
	}
	for _, f := range a.Helm.ValuesFiles {
		out = append(out, f.Digest)
	}
	for _, p := range a.Helm.PostRender {
		if p.File != nil {
			out = append(out, p.File.Digest)
		}
	}
	return out
}

// resolveHelm returns the release's Helm settings with their files resolved against
// artifacts, or why they cannot be: a source they name has no artifact yet.
func resolveHelm(r *v1alpha1.Release, artifacts map[string]Artifact) (*Helm, error) {
	h := r.Spec.Helm
	if h == nil {
		return nil, nil
	}
	ref := func(source, path string) (FileRef, error) {
		if source == "" {
			source = r.Spec.Source
		}
		a, ok := artifacts[source]
		if !ok {
			return FileRef{}, fmt.Errorf("source %q (named for %s) has no artifact", source, path)
		}
		return FileRef{Source: source, Revision: a.Revision, Digest: a.Digest, Path: path}, nil
	}
	out := &Helm{ReleaseName: h.ReleaseName, Values: h.Values, IncludeCRDs: h.IncludeCRDsOrDefault()}
	if out.ReleaseName == "" {
		out.ReleaseName = r.Metadata.Name
	}
	for _, f := range h.ValuesFiles {
		fr, err := ref(f.Source, f.Path)
		if err != nil {
			return nil, err
		}
		out.ValuesFiles = append(out.ValuesFiles, fr)
	}
	if h.PostRender != nil {
		for _, p := range h.PostRender.Patches {
			pp := PostRenderPatch{Patch: p.Patch, Target: p.Target}
			if p.Path != "" {
				fr, err := ref(p.Source, p.Path)
				if err != nil {
					return nil, err
				}
				pp.File = &fr
			}
			out.PostRender = append(out.PostRender, pp)
		}
	}
	return out, nil
}
