package agentapi

import (
	"context"
	"strings"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/textcut"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ActionAdopted is the audit action of a reconcile that took objects over from another tool
// (Release.spec.adopt).
const ActionAdopted = "release.adopted"

// maxAdoptedInRecord bounds the objects one adoption record lists; the agent sends at most
// 100 object details per status, but a report is input like any other.
const maxAdoptedInRecord = 100

// adoptedObjects are the objects a status says were adopted, as "kind.group/name" with their
// namespace; the count is of all of them.
func adoptedObjects(st *agentv1.AssignmentStatus) (objects []map[string]any, count int) {
	for _, d := range st.GetObjectDetails() {
		if d.GetAction() != "adopted" {
			continue
		}
		count++
		if len(objects) == maxAdoptedInRecord {
			continue
		}
		kind := strings.ToLower(d.GetKind())
		if d.GetGroup() != "" {
			kind += "." + d.GetGroup()
		}
		o := map[string]any{"object": kind + "/" + d.GetName()}
		if d.GetNamespace() != "" {
			o["namespace"] = d.GetNamespace()
		}
		if from := d.GetAdoptedFrom(); len(from) > 0 {
			o["from"] = boundedNames(from)
		}
		objects = append(objects, o)
	}
	return objects, count
}

// recordAdoption records, once (a report is ingested once, and an object is adopted only
// while the old managers still hold fields of it), which objects of release a reconcile took
// over, and from which managers by the release's rules in the cluster's desired state.
func (s *Server) recordAdoption(ctx context.Context, actor, cluster string, st *agentv1.AssignmentStatus) {
	objects, count := adoptedObjects(st)
	if count == 0 {
		return
	}
	detail := map[string]any{"revision": st.GetRevision(), "digest": st.GetDigest(), "objects": objects, "count": count}
	if rules := s.adoptRulesOf(ctx, cluster, st.GetRelease()); rules != nil {
		detail["fromManagers"] = rules.FromManagers
		if rules.HelmRelease != "" {
			detail["helmRelease"] = rules.HelmRelease
			if rules.HelmReleaseNamespace != "" {
				detail["helmReleaseNamespace"] = rules.HelmReleaseNamespace
			}
		}
	}
	s.d.Record(ctx, audit.Event{Actor: actor, Action: ActionAdopted, Cluster: cluster, Release: st.GetRelease(), Detail: detail})
}

// adoptRulesOf reads release's adopt rules from the cluster's desired state; nil when they
// cannot be read (the record then lists the objects alone).
func (s *Server) adoptRulesOf(ctx context.Context, cluster, release string) *v1alpha1.Adopt {
	ds, err := s.d.Store.GetDesiredState(ctx, cluster)
	if err != nil {
		return nil
	}
	doc, err := desired.DecodeDocument(ds.Document)
	if err != nil {
		return nil
	}
	for _, a := range doc.Assignments {
		if a.Release == release {
			return a.Adopt
		}
	}
	return nil
}

// boundedNames keeps at most 32 manager names of at most 128 bytes each, as the agent's
// rules allow: a report is input like any other.
func boundedNames(in []string) []string {
	out := make([]string, 0, min(len(in), 32))
	for _, n := range in[:min(len(in), 32)] {
		out = append(out, textcut.Cut(n, 128))
	}
	return out
}
