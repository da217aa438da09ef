// Package helmwire turns the scheduler's Helm settings (schedule.Helm) into their wire form,
// as the agent receives them, and into render options for the hub's own renders (plan, the
// fleet simulator). It keeps the scheduler's types out of internal/render, which the agent
// links.
package helmwire

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flotilla/flotilla/internal/hub/schedule"
	"github.com/flotilla/flotilla/internal/render"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Options are the render options of a on a cluster whose capabilities are unknown (Helm's
// defaults: the hub reads no cluster), or nil when a's path in root is not a chart and a has
// no Helm settings. dir returns the unpacked artifact of a digest.
func Options(ctx context.Context, a schedule.Assignment, root string, dir func(context.Context, string) (string, error)) (*render.Helm, error) {
	hr, err := Proto(a.Helm)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", a.Release, err)
	}
	return render.HelmOptions(ctx, &agentv1.Assignment{Release: a.Release, Namespace: a.Namespace, Path: a.Path, Revision: a.Revision, Helm: hr}, root, dir)
}

// Proto is a release's resolved Helm settings as the agent receives them; nil for none.
func Proto(h *schedule.Helm) (*agentv1.HelmRelease, error) {
	if h == nil {
		return nil, nil
	}
	out := &agentv1.HelmRelease{ReleaseName: h.ReleaseName, IncludeCrds: h.IncludeCRDs}
	if len(h.Values) > 0 {
		data, err := json.Marshal(h.Values)
		if err != nil {
			return nil, fmt.Errorf("helm values: %w", err)
		}
		out.ValuesJson = data
	}
	ref := func(f schedule.FileRef) *agentv1.FileRef {
		return &agentv1.FileRef{Source: f.Source, Revision: f.Revision, Digest: f.Digest, Path: f.Path}
	}
	for _, f := range h.ValuesFiles {
		out.ValuesFiles = append(out.ValuesFiles, ref(f))
	}
	for _, p := range h.PostRender {
		pp := &agentv1.PostRenderPatch{Patch: p.Patch}
		if p.File != nil {
			pp.File = ref(*p.File)
		}
		if t := p.Target; t != nil {
			pp.Target = &agentv1.PatchTarget{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		out.PostRender = append(out.PostRender, pp)
	}
	return out, nil
}
