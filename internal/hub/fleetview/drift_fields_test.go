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

// The drift view carries each field's values and the manager behind its live value when the
// agent detailed the object; an object beyond the agent's bounds keeps its paths alone.
func TestDriftFieldsNameTheManager(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	report := &agentv1.AssignmentStatus{Release: "web",
		Drift: []*agentv1.DriftedObject{
			{Object: "deployment.apps/web", Namespace: "web", Paths: []string{".spec.replicas"}},
			{Object: "configmap/undetailed", Namespace: "web", Paths: []string{".data.a"}},
		},
		ObjectDetails: []*agentv1.ObjectDetail{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web", Action: "drifted",
				Drift: []*agentv1.FieldDrift{{Path: ".spec.replicas", Desired: "2", Live: "5", Manager: "kubectl-edit"}}},
			// Same name in another namespace: not the drifted one.
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "other", Name: "web", Action: "drifted",
				Drift: []*agentv1.FieldDrift{{Path: ".spec.paused", Live: "true", Manager: "someone"}}},
		},
	}
	detail, err := protojson.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Drift([]store.AssignmentStatus{{Cluster: "a", Release: "web", Drifted: true, ReportedAt: at, Detail: detail}})
	if err != nil {
		t.Fatal(err)
	}
	want := []hubclient.DriftedObject{
		{Cluster: "a", Release: "web", Object: "configmap/undetailed", Namespace: "web", Paths: []string{".data.a"}, ReportedAt: at},
		{Cluster: "a", Release: "web", Object: "deployment.apps/web", Namespace: "web", Paths: []string{".spec.replicas"}, ReportedAt: at,
			Group: "apps", Kind: "Deployment", Name: "web", Fields: []hubclient.DriftField{{Path: ".spec.replicas", Desired: "2", Live: "5", Manager: "kubectl-edit"}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Drift (-want +got):\n%s", d)
	}
}
