package desired

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ToProto is cluster's document at generation as the agent receives it. Every document a hub
// sends says that removals are explicit (its tombstones are all the removals there are).
// Durations go in whole seconds (render budgets in milliseconds), as the wire form has them.
func ToProto(cluster string, generation int64, doc Document) (*agentv1.DesiredState, error) {
	return StateToProto(FromHub(cluster, generation, doc))
}

// FromHub is cluster's document at generation as this hub hands it to an agent, over Watch
// or in a bundle: its tombstones are all the removals there are.
func FromHub(cluster string, generation int64, doc Document) State {
	return State{Cluster: cluster, Generation: generation, ExplicitRemovals: true, Document: doc}
}

// StateToProto is s in its wire form, ExplicitRemovals as s has it: what an agent keeps of
// the document it accepted (its state dir holds the message as it came), and what a bundle
// carries.
func StateToProto(s State) (*agentv1.DesiredState, error) {
	cluster, doc := s.Cluster, s.Document
	out := &agentv1.DesiredState{Cluster: cluster, Generation: s.Generation, ExplicitRemovals: s.ExplicitRemovals}
	for _, t := range doc.Removed {
		out.Removed = append(out.Removed, &agentv1.Tombstone{
			Release: t.Release, Reason: t.Reason, FleetRevision: t.FleetRevision, Revision: t.Revision, Digest: t.Digest, Actor: t.Actor,
		})
	}
	for _, a := range doc.Assignments {
		pa, err := assignmentToProto(a)
		if err != nil {
			return nil, fmt.Errorf("desired state of cluster %q: release %q: %w", cluster, a.Release, err)
		}
		out.Assignments = append(out.Assignments, pa)
	}
	for _, g := range doc.Gates {
		out.Gates = append(out.Gates, &agentv1.Gate{
			Name: g.Name, Kind: g.Kind, Type: g.Type, Schedule: g.Schedule,
			DurationSeconds: int64(g.Duration / time.Second), TimeZone: g.TimeZone,
			Releases: g.Releases, Blocks: g.Blocks, Reason: g.Reason, Actor: g.Actor,
		})
	}
	for _, r := range doc.Syncs {
		out.Syncs = append(out.Syncs, &agentv1.SyncRequest{Id: r.ID, Release: r.Release, Override: r.Override, Actor: r.Actor})
	}
	return out, nil
}

// AssignmentToProto is one assignment in its wire form: what the agent keeps of the one in
// force for a release, as agents before this model kept it, and what identifies its content.
func AssignmentToProto(a Assignment) (*agentv1.Assignment, error) {
	pa, err := assignmentToProto(a)
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", a.Release, err)
	}
	return pa, nil
}

// AssignmentFromProto reads what AssignmentToProto wrote; see FromProto.
func AssignmentFromProto(pa *agentv1.Assignment) (Assignment, error) {
	a, err := assignmentFromProto(pa)
	if err != nil {
		return Assignment{}, fmt.Errorf("release %q: %w", pa.GetRelease(), err)
	}
	return a, nil
}

func assignmentToProto(a Assignment) (*agentv1.Assignment, error) {
	pa := &agentv1.Assignment{
		Release: a.Release, Source: a.Source, Url: a.URL, Revision: a.Revision, Digest: a.Digest,
		Path: a.Path, Namespace: a.Namespace, CreateNamespace: a.CreateNamespace,
		Prune: a.Prune, SelfHeal: a.SelfHeal, Wait: a.Wait,
		TimeoutSeconds: int64(a.Timeout / time.Second), IntervalSeconds: int64(a.Interval / time.Second),
		Vars:            a.Vars,
		RespectManagers: a.RespectManagers, DependsOn: a.DependsOn, Rollout: a.Rollout,
		Decryption: a.Decryption,
	}
	if r := a.Project; r != nil { // unset: the platform project, no bounds
		pa.Project = &agentv1.ProjectRules{Name: r.Name, Namespaces: r.Namespaces}
		for _, gk := range r.Allow {
			pa.Project.AllowKinds = append(pa.Project.AllowKinds, &agentv1.GroupKind{Group: gk.Group, Kind: gk.Kind})
		}
		for _, gk := range r.Deny {
			pa.Project.DenyKinds = append(pa.Project.DenyKinds, &agentv1.GroupKind{Group: gk.Group, Kind: gk.Kind})
		}
		if sa := r.ServiceAccount; sa != nil {
			pa.Project.ServiceAccountNamespace, pa.Project.ServiceAccountName = sa.Namespace, sa.Name
		}
	}
	for _, r := range a.Ignore {
		pa.Ignore = append(pa.Ignore, &agentv1.IgnoreRule{
			Group: r.Target.Group, Kind: r.Target.Kind, Name: r.Target.Name, Namespace: r.Target.Namespace, Paths: r.Paths,
		})
	}
	if ad := a.Adopt; ad != nil {
		pa.Adopt = &agentv1.AdoptRules{FromManagers: ad.FromManagers, HelmRelease: ad.HelmRelease, HelmReleaseNamespace: ad.HelmReleaseNamespace}
	}
	if b := a.RenderBudget; b != nil {
		pa.RenderBudget = &agentv1.RenderBudget{
			MemoryBytes: b.MemoryBytes, CpuMillis: b.CPUTime.Milliseconds(), WallMillis: b.WallTime.Milliseconds(),
			Objects: int64(b.Objects), OutputBytes: b.OutputBytes,
		}
	}
	if h := a.Helm; h != nil {
		ph := &agentv1.HelmRelease{ReleaseName: h.ReleaseName, IncludeCrds: h.IncludeCRDs}
		if len(h.Values) > 0 {
			data, err := json.Marshal(h.Values)
			if err != nil {
				return nil, fmt.Errorf("helm values: %w", err)
			}
			ph.ValuesJson = data
		}
		for _, f := range h.ValuesFiles {
			ph.ValuesFiles = append(ph.ValuesFiles, fileRefToProto(f))
		}
		for _, p := range h.PostRender {
			pp := &agentv1.PostRenderPatch{Patch: p.Patch}
			if p.File != nil {
				pp.File = fileRefToProto(*p.File)
			}
			if t := p.Target; t != nil {
				pp.Target = &agentv1.PatchTarget{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
					LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
			}
			ph.PostRender = append(ph.PostRender, pp)
		}
		pa.Helm = ph
	}
	return pa, nil
}

func fileRefToProto(f FileRef) *agentv1.FileRef {
	return &agentv1.FileRef{Source: f.Source, Revision: f.Revision, Digest: f.Digest, Path: f.Path}
}

// FromProto is the desired state an agent received. It copies what it takes from m, so that
// the result shares nothing with the message. Helm values keep their numbers exact
// (json.Number), as the hub wrote them. Vars are never nil, as [DecodeDocument] makes them.
// A gate's duration beyond [window.MaxDuration] stays beyond it (not wrapped round), and a
// negative one stays negative, so that [window.Check] refuses the gate.
// Any field it cannot read (Helm values that are not JSON) refuses the whole document.
func FromProto(m *agentv1.DesiredState) (State, error) {
	s := State{Cluster: m.GetCluster(), Generation: m.GetGeneration(), ExplicitRemovals: m.GetExplicitRemovals()}
	s.Assignments = make([]Assignment, 0, len(m.GetAssignments()))
	for _, pa := range m.GetAssignments() {
		a, err := assignmentFromProto(pa)
		if err != nil {
			return State{}, fmt.Errorf("desired state generation %d of cluster %q: release %q: %w", s.Generation, s.Cluster, pa.GetRelease(), err)
		}
		s.Assignments = append(s.Assignments, a)
	}
	for _, t := range m.GetRemoved() {
		s.Removed = append(s.Removed, Tombstone{
			Release: t.GetRelease(), Reason: t.GetReason(), FleetRevision: t.GetFleetRevision(),
			Revision: t.GetRevision(), Digest: t.GetDigest(), Actor: t.GetActor(),
		})
	}
	for _, g := range m.GetGates() {
		s.Gates = append(s.Gates, window.Gate{
			Name: g.GetName(), Kind: g.GetKind(), Type: g.GetType(), Schedule: g.GetSchedule(),
			Duration: gateDuration(g.GetDurationSeconds()), TimeZone: g.GetTimeZone(),
			Releases: slices.Clone(g.GetReleases()), Blocks: slices.Clone(g.GetBlocks()), Reason: g.GetReason(), Actor: g.GetActor(),
		})
	}
	for _, r := range m.GetSyncs() {
		s.Syncs = append(s.Syncs, SyncRequest{ID: r.GetId(), Release: r.GetRelease(), Override: r.GetOverride(), Actor: r.GetActor()})
	}
	return s, nil
}

func gateDuration(seconds int64) time.Duration {
	switch {
	case seconds < 0:
		return -time.Second
	case seconds > int64(window.MaxDuration/time.Second):
		return window.MaxDuration + time.Second
	}
	return time.Duration(seconds) * time.Second
}

func assignmentFromProto(pa *agentv1.Assignment) (Assignment, error) {
	a := Assignment{
		Release: pa.GetRelease(), Source: pa.GetSource(), URL: pa.GetUrl(), Revision: pa.GetRevision(), Digest: pa.GetDigest(),
		Path: pa.GetPath(), Namespace: pa.GetNamespace(), CreateNamespace: pa.GetCreateNamespace(),
		Prune: pa.GetPrune(), SelfHeal: pa.GetSelfHeal(), Wait: pa.GetWait(),
		Timeout:         time.Duration(pa.GetTimeoutSeconds()) * time.Second,
		Interval:        time.Duration(pa.GetIntervalSeconds()) * time.Second,
		Vars:            maps.Clone(pa.GetVars()),
		RespectManagers: slices.Clone(pa.GetRespectManagers()), DependsOn: slices.Clone(pa.GetDependsOn()),
		Rollout: pa.GetRollout(), Decryption: pa.GetDecryption(),
	}
	if a.Vars == nil {
		a.Vars = map[string]string{}
	}
	if p := pa.GetProject(); p != nil {
		r := &project.Rules{Name: p.GetName(), Namespaces: slices.Clone(p.GetNamespaces())}
		for _, gk := range p.GetAllowKinds() {
			r.Allow = append(r.Allow, v1alpha1.GroupKind{Group: gk.GetGroup(), Kind: gk.GetKind()})
		}
		for _, gk := range p.GetDenyKinds() {
			r.Deny = append(r.Deny, v1alpha1.GroupKind{Group: gk.GetGroup(), Kind: gk.GetKind()})
		}
		// The wire has no "no ServiceAccount" of its own: an empty name is the agent's
		// identity, as nil is here.
		if p.GetServiceAccountName() != "" {
			r.ServiceAccount = &v1alpha1.ServiceAccountRef{Namespace: p.GetServiceAccountNamespace(), Name: p.GetServiceAccountName()}
		}
		a.Project = r
	}
	for _, r := range pa.GetIgnore() {
		a.Ignore = append(a.Ignore, v1alpha1.IgnoreRule{
			Target: v1alpha1.IgnoreTarget{Group: r.GetGroup(), Kind: r.GetKind(), Name: r.GetName(), Namespace: r.GetNamespace()},
			Paths:  slices.Clone(r.GetPaths()),
		})
	}
	if ad := pa.GetAdopt(); ad != nil {
		a.Adopt = &v1alpha1.Adopt{FromManagers: slices.Clone(ad.GetFromManagers()), HelmRelease: ad.GetHelmRelease(), HelmReleaseNamespace: ad.GetHelmReleaseNamespace()}
	}
	if b := pa.GetRenderBudget(); b != nil {
		a.RenderBudget = &v1alpha1.BudgetLimits{
			MemoryBytes: b.GetMemoryBytes(), CPUTime: time.Duration(b.GetCpuMillis()) * time.Millisecond,
			WallTime: time.Duration(b.GetWallMillis()) * time.Millisecond, Objects: int(b.GetObjects()), OutputBytes: b.GetOutputBytes(),
		}
	}
	if ph := pa.GetHelm(); ph != nil {
		h := &Helm{ReleaseName: ph.GetReleaseName(), IncludeCRDs: ph.GetIncludeCrds()}
		if data := ph.GetValuesJson(); len(data) > 0 {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err := dec.Decode(&h.Values); err != nil {
				return Assignment{}, fmt.Errorf("helm values: %w", err)
			}
		}
		for _, f := range ph.GetValuesFiles() {
			h.ValuesFiles = append(h.ValuesFiles, fileRefFromProto(f))
		}
		for _, p := range ph.GetPostRender() {
			pp := PostRenderPatch{Patch: p.GetPatch()}
			if f := p.GetFile(); f != nil {
				fr := fileRefFromProto(f)
				pp.File = &fr
			}
			if t := p.GetTarget(); t != nil {
				pp.Target = &v1alpha1.PatchTarget{Group: t.GetGroup(), Version: t.GetVersion(), Kind: t.GetKind(), Name: t.GetName(),
					Namespace: t.GetNamespace(), LabelSelector: t.GetLabelSelector(), AnnotationSelector: t.GetAnnotationSelector()}
			}
			h.PostRender = append(h.PostRender, pp)
		}
		a.Helm = h
	}
	return a, nil
}

func fileRefFromProto(f *agentv1.FileRef) FileRef {
	return FileRef{Source: f.GetSource(), Revision: f.GetRevision(), Digest: f.GetDigest(), Path: f.GetPath()}
}
