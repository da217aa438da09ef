package fleetview

import (
	"strings"

	"github.com/flotilla/flotilla/internal/hubapi"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ReportedObjects lists the objects a status details. Drift an agent reported without
// object detail (agents before it, and drift beyond its bounds) is listed from the status's
// drift summary, with the paths and without values.
func ReportedObjects(st *agentv1.AssignmentStatus) ([]hubapi.ObjectView, int) {
	out := []hubapi.ObjectView{}
	have := map[[2]string]bool{}
	for _, d := range st.GetObjectDetails() {
		o := hubapi.ObjectView{
			Group: d.GetGroup(), Version: d.GetVersion(), Kind: d.GetKind(), Namespace: d.GetNamespace(), Name: d.GetName(),
			Object: kubectlName(d.GetGroup(), d.GetKind(), d.GetName()), Action: d.GetAction(),
			Health: d.GetHealth(), HealthMessage: d.GetHealthMessage(), Error: d.GetError(), FieldsOmitted: int(d.GetFieldsOmitted()),
			Drift: []hubapi.FieldDrift{}, Conflicts: []hubapi.FieldConflict{},
		}
		for _, f := range d.GetDrift() {
			o.Drift = append(o.Drift, hubapi.FieldDrift{Path: f.GetPath(), Desired: f.GetDesired(), Live: f.GetLive(), Manager: f.GetManager()})
		}
		for _, c := range d.GetConflicts() {
			o.Conflicts = append(o.Conflicts, hubapi.FieldConflict{Field: c.GetField(), Owner: c.GetOwner()})
		}
		have[[2]string{o.Namespace, o.Object}] = true
		out = append(out, o)
	}
	for _, d := range st.GetDrift() {
		if have[[2]string{d.GetNamespace(), d.GetObject()}] {
			continue
		}
		o := hubapi.ObjectView{Object: d.GetObject(), Namespace: d.GetNamespace(), Action: "drifted", Drift: []hubapi.FieldDrift{}, Conflicts: []hubapi.FieldConflict{}}
		if d.GetHealed() {
			o.Action = "healed"
		}
		for _, p := range d.GetPaths() {
			o.Drift = append(o.Drift, hubapi.FieldDrift{Path: p})
		}
		out = append(out, o)
	}
	return out, int(st.GetObjectDetailsOmitted())
}

// kubectlName is the kubectl form of an object: deployment.apps/web, configmap/settings.
func kubectlName(group, kind, name string) string {
	k := strings.ToLower(kind)
	if group != "" {
		k += "." + group
	}
	return k + "/" + name
}
