package agentapi

import (
	"fmt"
	"reflect"
	"testing"

	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

func TestAdoptedObjects(t *testing.T) {
	t.Parallel()
	many := &agentv1.AssignmentStatus{}
	for i := range maxAdoptedInRecord + 5 {
		many.ObjectDetails = append(many.ObjectDetails, &agentv1.ObjectDetail{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i), Action: "adopted"})
	}
	cases := []struct {
		name      string
		st        *agentv1.AssignmentStatus
		wantFirst []map[string]any
		wantLen   int
		wantCount int
	}{
		{"none adopted", &agentv1.AssignmentStatus{ObjectDetails: []*agentv1.ObjectDetail{{Kind: "ConfigMap", Name: "x", Action: "conflict"}}}, nil, 0, 0},
		{"adopted among others", &agentv1.AssignmentStatus{ObjectDetails: []*agentv1.ObjectDetail{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web", Action: "adopted", AdoptedFrom: []string{"argocd-controller", "kubectl-client-side-apply"}},
			{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "drifted", Action: "drifted"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader", Action: "adopted"},
		}}, []map[string]any{{"object": "deployment.apps/web", "namespace": "shop", "from": []string{"argocd-controller", "kubectl-client-side-apply"}}, {"object": "clusterrole.rbac.authorization.k8s.io/reader"}}, 2, 2},
		{"bounded", many, []map[string]any{{"object": "configmap/cm-0", "namespace": "shop"}}, maxAdoptedInRecord, maxAdoptedInRecord + 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objects, count := adoptedObjects(tc.st)
			if len(objects) != tc.wantLen || count != tc.wantCount {
				t.Fatalf("got %d objects, count %d; want %d, %d", len(objects), count, tc.wantLen, tc.wantCount)
			}
			if tc.wantFirst != nil && !reflect.DeepEqual(objects[:len(tc.wantFirst)], tc.wantFirst) {
				t.Errorf("objects %v, want %v first", objects, tc.wantFirst)
			}
		})
	}
}
