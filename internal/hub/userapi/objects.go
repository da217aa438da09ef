package userapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hubapi"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// AssignmentDetail is one release on one cluster as its agent last reported it: the status
// `flotilla status` shows, what the hub asks of the cluster, and every object the agent
// reported on. Agents detail only the objects that need a look (not Current, drifted, in
// conflict, failed), so Objects lists those; the others are counted in Assignment.Objects.
// Nothing here is read from the cluster.
type AssignmentDetail struct {
	Assignment hubapi.AssignmentView `json:"assignment"`
	Desired    DesiredSettings       `json:"desired"`
	// Reported: the agent has reported on this assignment; the fields below are from its last
	// report (at Assignment.ReportedAt), empty before.
	Reported        bool    `json:"reported"`
	Created         int32   `json:"created"`
	Configured      int32   `json:"configured"`
	Pruned          int32   `json:"pruned"`
	DurationSeconds float64 `json:"durationSeconds"`
	// ConflictTexts name each conflict's object, field and owner.
	ConflictTexts []string     `json:"conflictTexts"`
	Objects       []ObjectView `json:"objects"`
	// ObjectsOmitted counts objects that needed a look but were left out of the report by the
	// agent's bounds.
	ObjectsOmitted int `json:"objectsOmitted"`
}

// DesiredSettings are the assignment's settings in the cluster's desired state.
type DesiredSettings struct {
	Source    string `json:"source"`
	Path      string `json:"path"`
	Namespace string `json:"namespace,omitempty"`
	Prune     bool   `json:"prune"`
	SelfHeal  bool   `json:"selfHeal"`
	Wait      bool   `json:"wait"`
	Timeout   string `json:"timeout"`
	Interval  string `json:"interval"`
}

// ObjectView is one object of an assignment as the agent reported it.
type ObjectView struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Object is the kubectl form: deployment.apps/web.
	Object string `json:"object"`
	// Action is what the last reconcile did: created, configured, unchanged, healed,
	// drifted, conflict.
	Action        string          `json:"action,omitempty"`
	Health        string          `json:"health,omitempty"`
	HealthMessage string          `json:"healthMessage,omitempty"`
	Drift         []FieldDrift    `json:"drift"`
	Conflicts     []FieldConflict `json:"conflicts"`
	Error         string          `json:"error,omitempty"`
	// FieldsOmitted counts drift and conflict entries the agent left out.
	FieldsOmitted int `json:"fieldsOmitted,omitempty"`
}

// FieldDrift is one drifted field: the desired and the live value as JSON ("" when the field
// is absent on that side, or not reported by an older agent).
type FieldDrift struct {
	Path    string `json:"path"`
	Desired string `json:"desired"`
	Live    string `json:"live"`
	// Manager is the field manager that wrote the live value, when the agent could tell.
	Manager string `json:"manager,omitempty"`
}

// FieldConflict is a field the object declares and the owner that holds it.
type FieldConflict struct {
	Field string `json:"field"`
	Owner string `json:"owner"`
}

// assignmentDetail answers GET /api/v1/clusters/{name}/releases/{release}.
func (api *API) assignmentDetail(w http.ResponseWriter, r *http.Request) {
	out, err := api.assignmentView(r.Context(), r.PathValue("name"), r.PathValue("release"))
	if err != nil {
		writeViewError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (api *API) assignmentView(ctx context.Context, cluster, release string) (AssignmentDetail, error) {
	fd, err := api.loadFleet(ctx, hubapi.StatusFilter{Cluster: cluster, Release: release})
	if err != nil {
		return AssignmentDetail{}, err
	}
	if len(fd.assignments) == 0 {
		return AssignmentDetail{}, errUnknown{fmt.Sprintf("release %q is not assigned to cluster %q", release, cluster)}
	}
	out := AssignmentDetail{Assignment: fd.assignments[0], ConflictTexts: []string{}, Objects: []ObjectView{}}
	if ds, err := api.d.Store.GetDesiredState(ctx, cluster); err == nil {
		if as, err := api.d.Desired.Decode(cluster, ds.Document); err == nil {
			for _, a := range as {
				if a.Release == release {
					out.Desired = DesiredSettings{
						Source: a.Source, Path: a.Path, Namespace: a.Namespace, Prune: a.Prune, SelfHeal: a.SelfHeal, Wait: a.Wait,
						Timeout: a.Timeout.String(), Interval: a.Interval.String(),
					}
				}
			}
		}
	}
	if len(fd.statuses) == 0 {
		return out, nil
	}
	out.Reported = true
	var st agentv1.AssignmentStatus
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(fd.statuses[0].Detail, &st); err != nil {
		// The summary is still right: it comes from the stored columns.
		api.d.Logger.Warn("assignment view: the report's detail is unreadable", "cluster", cluster, "release", release, "error", err)
		return out, nil
	}
	out.Created, out.Configured, out.Pruned, out.DurationSeconds = st.GetCreated(), st.GetConfigured(), st.GetPruned(), st.GetDurationSeconds()
	out.ConflictTexts = append(out.ConflictTexts, st.GetConflicts()...)
	out.Objects, out.ObjectsOmitted = reportedObjects(&st)
	return out, nil
}

// reportedObjects lists the objects a status details. Drift an agent reported without
// object detail (agents before it, and drift beyond its bounds) is listed from the status's
// drift summary, with the paths and without values.
func reportedObjects(st *agentv1.AssignmentStatus) ([]ObjectView, int) {
	out := []ObjectView{}
	have := map[[2]string]bool{}
	for _, d := range st.GetObjectDetails() {
		o := ObjectView{
			Group: d.GetGroup(), Version: d.GetVersion(), Kind: d.GetKind(), Namespace: d.GetNamespace(), Name: d.GetName(),
			Object: kubectlName(d.GetGroup(), d.GetKind(), d.GetName()), Action: d.GetAction(),
			Health: d.GetHealth(), HealthMessage: d.GetHealthMessage(), Error: d.GetError(), FieldsOmitted: int(d.GetFieldsOmitted()),
			Drift: []FieldDrift{}, Conflicts: []FieldConflict{},
		}
		for _, f := range d.GetDrift() {
			o.Drift = append(o.Drift, FieldDrift{Path: f.GetPath(), Desired: f.GetDesired(), Live: f.GetLive(), Manager: f.GetManager()})
		}
		for _, c := range d.GetConflicts() {
			o.Conflicts = append(o.Conflicts, FieldConflict{Field: c.GetField(), Owner: c.GetOwner()})
		}
		have[[2]string{o.Namespace, o.Object}] = true
		out = append(out, o)
	}
	for _, d := range st.GetDrift() {
		if have[[2]string{d.GetNamespace(), d.GetObject()}] {
			continue
		}
		o := ObjectView{Object: d.GetObject(), Namespace: d.GetNamespace(), Action: "drifted", Drift: []FieldDrift{}, Conflicts: []FieldConflict{}}
		if d.GetHealed() {
			o.Action = "healed"
		}
		for _, p := range d.GetPaths() {
			o.Drift = append(o.Drift, FieldDrift{Path: p})
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
