package fleetview

import (
	"bytes"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubapi"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Drift lists the drifted objects, healed or left in place, in the statuses' reports (store.AssignmentStatus.Detail, the
// agent's AssignmentStatus as protojson), ordered by cluster, release, namespace and object.
// A status whose Detail cannot be decoded is an error naming it; it never hides the others,
// which are returned with it.
func Drift(statuses []store.AssignmentStatus) ([]hubapi.DriftedObject, error) {
	out := []hubapi.DriftedObject{}
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
		for _, d := range st.GetDrift() {
			paths := d.GetPaths()
			if paths == nil {
				paths = []string{}
			}
			out = append(out, hubapi.DriftedObject{
				Cluster: s.Cluster, Release: s.Release, Object: d.GetObject(), Namespace: d.GetNamespace(),
				Paths: paths, Healed: d.GetHealed(), ReportedAt: s.ReportedAt,
			})
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
