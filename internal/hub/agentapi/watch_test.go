package agentapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/hub/store"
	"github.com/flotilla/flotilla/internal/project"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// Each assignment carries its project's rules to the agent; one of the built-in platform
// project carries none.
func TestDesiredToProtoCarriesProjectRules(t *testing.T) {
	t.Parallel()
	rules := &project.Rules{
		Name: "team-a", Namespaces: []string{"team-a-*"},
		Allow:          []v1alpha1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "Role"}},
		Deny:           []v1alpha1.GroupKind{{Kind: "Secret"}},
		ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "team-a", Name: "deployer"},
	}
	doc, err := desired.Encode(desired.Document{Assignments: []desired.Assignment{
		{Release: "baseline", Source: "platform"},
		{Release: "web", Source: "team-a", Project: rules},
	}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := DesiredToProto(store.DesiredState{Cluster: "eu-1", Generation: 3, Document: doc})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*agentv1.ProjectRules{}
	for _, a := range msg.GetAssignments() {
		got[a.GetRelease()] = a.GetProject()
	}
	want := map[string]*agentv1.ProjectRules{
		"baseline": nil,
		"web": {
			Name: "team-a", Namespaces: []string{"team-a-*"},
			AllowKinds:              []*agentv1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "Role"}},
			DenyKinds:               []*agentv1.GroupKind{{Kind: "Secret"}},
			ServiceAccountNamespace: "team-a", ServiceAccountName: "deployer",
		},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("project rules sent (-want +got):\n%s", diff)
	}
}
