package fleetview

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Drift lists the drifted objects, healed or left in place, in the statuses' reports (store.AssignmentStatus.Detail, the
// agent's AssignmentStatus as protojson), ordered by cluster, release, namespace and object.
// A status whose Detail cannot be decoded is an error naming it; it never hides the others,
// which are returned with it.
func Drift(statuses []store.AssignmentStatus) ([]hubclient.DriftedObject, error) {
	out := []hubclient.DriftedObject{}
	var firstErr error
	for _, s := range statuses {
		// Drifted is set only for drift left in place; healed drift is in the detail alone.
		// Most reports have none: skip decoding those.
		if !bytes.Contains(s.Detail, []byte(`"drift"`)) {
			continue
		}
		var st agentv1.AssignmentStatus
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(s.Detail, &st); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("report of release %s on cluster %s: %w", s.Release, s.Cluster, err)
			}
			continue
		}
		details := detailedObjects(&st)
		for _, d := range st.GetDrift() {
			paths := d.GetPaths()
			if paths == nil {
				paths = []string{}
			}
			o := hubclient.DriftedObject{
				Cluster: s.Cluster, Release: s.Release, Object: d.GetObject(), Namespace: d.GetNamespace(),
				Paths: paths, Healed: d.GetHealed(), ReportedAt: s.ReportedAt,
			}
			if od := details[[2]string{d.GetNamespace(), d.GetObject()}]; od != nil {
				o.Group, o.Kind, o.Name = od.GetGroup(), od.GetKind(), od.GetName()
				for _, f := range od.GetDrift() {
					o.Fields = append(o.Fields, hubclient.DriftField{Path: f.GetPath(), Desired: f.GetDesired(), Live: f.GetLive(), Manager: f.GetManager()})
				}
			}
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Object < b.Object
	})
	return out, firstErr
}

// detailedObjects indexes a report's object details by namespace and kubectl form
// (deployment.apps/web), the key its drift summary uses.
func detailedObjects(st *agentv1.AssignmentStatus) map[[2]string]*agentv1.ObjectDetail {
	out := map[[2]string]*agentv1.ObjectDetail{}
	for _, d := range st.GetObjectDetails() {
		k := strings.ToLower(d.GetKind())
		if d.GetGroup() != "" {
			k += "." + d.GetGroup()
		}
		out[[2]string{d.GetNamespace(), k + "/" + d.GetName()}] = d
	}
	return out
}
