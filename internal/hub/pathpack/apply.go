package pathpack

import (
	"context"
	"fmt"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/schedule"
)

// Apply gives every assignment in plan the per-path artifact of its source artifact and
// path, and every Helm values or patch file the artifact of that file alone, then closes the
// round (End). Revision stays the source's revision.
//
// Left whole: a Helm source's artifact (it is one chart), and the releases no longer in
// fleet (leaving along a rollout's waves, at what they had). A release with a rollout is
// narrowed too, and keeps the source artifact it was packed from in SourceDigest: the
// rollout compares that across clusters. An assignment whose closure cannot be packed keeps the cluster's
// previous assignment of its release, or is left out, with a problem saying why: it never
// gets the whole source instead.
func (p *Packer) Apply(ctx context.Context, fleet *v1alpha1.Fleet, plan *schedule.Plan, previous map[string]desired.Document) {
	defer p.End()
	if fleet == nil {
		return
	}
	whole := map[string]bool{}
	for _, s := range fleet.Sources {
		if s.Spec.Helm != nil {
			whole[s.Metadata.Name] = true
		}
	}
	narrowed, rolled := map[string]bool{}, map[string]bool{}
	for _, r := range fleet.Releases {
		narrowed[r.Metadata.Name] = true
		rolled[r.Metadata.Name] = r.Spec.Rollout != nil
	}
	for cluster, as := range plan.Assignments {
		out := make([]desired.Assignment, 0, len(as))
		for _, a := range as {
			if !narrowed[a.Release] {
				out = append(out, a)
				continue
			}
			n, err := p.assignment(ctx, a, whole)
			if err == nil && rolled[a.Release] && n.Digest != a.Digest && a.SourceDigest == "" {
				n.SourceDigest = a.Digest
			}
			if err == nil {
				out = append(out, n)
				continue
			}
			if ctx.Err() != nil {
				return // shutting down: nothing is stored from this plan
			}
			msg := fmt.Sprintf("per-path artifact of path %q at %s not packed: %v", a.Path, a.Revision, err)
			if prev, ok := find(previous[cluster].Assignments, a.Release); ok {
				out = append(out, prev)
				msg += fmt.Sprintf("; kept the previous assignment (revision %s)", prev.Revision)
			} else {
				msg += "; not assigned"
			}
			plan.Problems = append(plan.Problems, schedule.Problem{Release: a.Release, Cluster: cluster, Message: msg})
		}
		plan.Assignments[cluster] = out
	}
}

// assignment returns a with its artifacts narrowed.
func (p *Packer) assignment(ctx context.Context, a desired.Assignment, whole map[string]bool) (desired.Assignment, error) {
	if !p.keep(a.Source, a.Digest, whole) {
		d, err := p.Narrow(ctx, a.Digest, a.Path)
		if err != nil {
			return a, err
		}
		a.Digest = d
	}
	if a.Helm == nil {
		return a, nil
	}
	h := *a.Helm // shared by every cluster of the release: copied, not changed
	h.ValuesFiles = append([]desired.FileRef(nil), h.ValuesFiles...)
	for i := range h.ValuesFiles {
		if err := p.file(ctx, &h.ValuesFiles[i], whole); err != nil {
			return a, err
		}
	}
	h.PostRender = append([]desired.PostRenderPatch(nil), h.PostRender...)
	for i := range h.PostRender {
		if f := h.PostRender[i].File; f != nil {
			cp := *f
			if err := p.file(ctx, &cp, whole); err != nil {
				return a, err
			}
			h.PostRender[i].File = &cp
		}
	}
	a.Helm = &h
	return a, nil
}

// file narrows a Helm values or patch file to an artifact of that file alone.
func (p *Packer) file(ctx context.Context, f *desired.FileRef, whole map[string]bool) error {
	if p.keep(f.Source, f.Digest, whole) {
		return nil
	}
	d, err := p.Narrow(ctx, f.Digest, f.Path)
	if err != nil {
		return fmt.Errorf("file %q of source %s: %w", f.Path, f.Source, err)
	}
	f.Digest = d
	return nil
}

// keep reports whether the artifact digest of source stays as it is: a Helm source's, or one
// this replica does not hold. The sources' current artifacts are always here (the poll packed
// them); one that is not is an assignment kept from before (another replica packed it, or a
// hub that packed no per-path artifacts yet), which the next revision of its source narrows.
func (p *Packer) keep(source, digest string, whole map[string]bool) bool {
	return whole[source] || !p.Holds(digest)
}

func find(as []desired.Assignment, release string) (desired.Assignment, bool) {
	for _, a := range as {
		if a.Release == release {
			return a, true
		}
	}
	return desired.Assignment{}, false
}
