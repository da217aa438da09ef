package fleetview

import (
	"strings"

	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ReportedObjects lists the objects a status details. Drift an agent reported without
// object detail (agents before it, and drift beyond its bounds) is listed from the status's
// drift summary, with the paths and without values.
func ReportedObjects(st *agentv1.AssignmentStatus) ([]hubclient.ObjectView, int) {
	out := []hubclient.ObjectView{}
	have := map[[2]string]bool{}
	for _, d := range st.GetObjectDetails() {
		o := hubclient.ObjectView{
			Group: d.GetGroup(), Version: d.GetVersion(), Kind: d.GetKind(), Namespace: d.GetNamespace(), Name: d.GetName(),
			Object: kubectlName(d.GetGroup(), d.GetKind(), d.GetName()), Action: d.GetAction(),
			Health: d.GetHealth(), HealthMessage: d.GetHealthMessage(), Error: d.GetError(), FieldsOmitted: int(d.GetFieldsOmitted()),
			Drift: []hubclient.FieldDrift{}, Conflicts: []hubclient.FieldConflict{},
		}
		for _, f := range d.GetDrift() {
			o.Drift = append(o.Drift, hubclient.FieldDrift{Path: f.GetPath(), Desired: f.GetDesired(), Live: f.GetLive(), Manager: f.GetManager()})
		}
		for _, c := range d.GetConflicts() {
			o.Conflicts = append(o.Conflicts, hubclient.FieldConflict{Field: c.GetField(), Owner: c.GetOwner()})
		}
		have[[2]string{o.Namespace, o.Object}] = true
		out = append(out, o)
	}
	for _, d := range st.GetDrift() {
		if have[[2]string{d.GetNamespace(), d.GetObject()}] {
			continue
		}
		o := hubclient.ObjectView{Object: d.GetObject(), Namespace: d.GetNamespace(), Action: "drifted", Drift: []hubclient.FieldDrift{}, Conflicts: []hubclient.FieldConflict{}}
		if d.GetHealed() {
			o.Action = "healed"
		}
		for _, p := range d.GetPaths() {
			o.Drift = append(o.Drift, hubclient.FieldDrift{Path: p})
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
