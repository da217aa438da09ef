package fleetview

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func TestDrift(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	detail := func(drift ...*agentv1.DriftedObject) []byte {
		b, err := protojson.Marshal(&agentv1.AssignmentStatus{Release: "web", Drift: drift})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in := []store.AssignmentStatus{
		{Cluster: "b", Release: "web", Drifted: true, ReportedAt: at, Detail: detail(
			&agentv1.DriftedObject{Object: "deployment.apps/web", Namespace: "web", Paths: []string{".spec.replicas"}, Healed: true},
			&agentv1.DriftedObject{Object: "configmap/web", Namespace: "web", Paths: []string{".data.level", ".metadata.labels.team"}},
		)},
		{Cluster: "a", Release: "web", Drifted: false, ReportedAt: at, Detail: detail()},
		{Cluster: "a", Release: "api", Drifted: true, ReportedAt: at, Detail: []byte(`{"drift": not json`)},
		// Healed drift only: the agent does not set Drifted, the detail lists it.
		{Cluster: "c", Release: "web", ReportedAt: at, Detail: detail(
			&agentv1.DriftedObject{Object: "configmap/web", Namespace: "web", Paths: []string{".data.level"}, Healed: true},
		)},
	}
	got, err := Drift(in)
	if err == nil || err.Error()[:30] != "report of release api on clust" {
		t.Errorf("Drift error = %v, want one naming release api on cluster a", err)
	}
	want := []hubclient.DriftedObject{
		{Cluster: "b", Release: "web", Object: "configmap/web", Namespace: "web", Paths: []string{".data.level", ".metadata.labels.team"}, ReportedAt: at},
		{Cluster: "b", Release: "web", Object: "deployment.apps/web", Namespace: "web", Paths: []string{".spec.replicas"}, Healed: true, ReportedAt: at},
		{Cluster: "c", Release: "web", Object: "configmap/web", Namespace: "web", Paths: []string{".data.level"}, Healed: true, ReportedAt: at},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Drift (-want +got):\n%s", diff)
	}
}
