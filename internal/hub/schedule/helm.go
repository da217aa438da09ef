package schedule

import (
	"fmt"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
)

// resolveHelm returns the release's Helm settings with their files resolved against
// artifacts, or why they cannot be: a source they name has no artifact yet.
func resolveHelm(r *v1alpha1.Release, artifacts map[string]Artifact) (*desired.Helm, error) {
	h := r.Spec.Helm
	if h == nil {
		return nil, nil
	}
	ref := func(source, path string) (desired.FileRef, error) {
		if source == "" {
			source = r.Spec.Source
		}
		a, ok := artifacts[source]
		if !ok {
			return desired.FileRef{}, fmt.Errorf("source %q (named for %s) has no artifact", source, path)
		}
		return desired.FileRef{Source: source, Revision: a.Revision, Digest: a.Digest, Path: path}, nil
	}
	out := &desired.Helm{ReleaseName: h.ReleaseName, Values: h.Values, IncludeCRDs: h.IncludeCRDsOrDefault()}
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
			pp := desired.PostRenderPatch{Patch: p.Patch, Target: p.Target}
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
