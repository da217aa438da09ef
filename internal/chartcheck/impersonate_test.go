package chartcheck

import (
	"encoding/json"
	"slices"
	"testing"
)

// The chart grants impersonation only on the ServiceAccounts agent.impersonate lists; every
// ServiceAccount is an explicit choice (any).
func TestChartAgentImpersonation(t *testing.T) {
	t.Parallel()
	const base = "hub: {enabled: false}\nagent: {enabled: true, hubURL: 'https://hub.example.com:8443', impersonate: "
	for _, tc := range []struct {
		name, impersonate string
		rule              string   // the ClusterRole's rules, as JSON
		clusterBinding    bool     // a ClusterRoleBinding to it
		roleBindings      []string // namespaces of RoleBindings to it
	}{
		{"the default: deployer, by name", "{}",
			`[{"apiGroups":[""],"resourceNames":["deployer"],"resources":["serviceaccounts"],"verbs":["impersonate"]}]`, true, nil},
		{"names", "{names: [team-a, team-b]}",
			`[{"apiGroups":[""],"resourceNames":["team-a","team-b"],"resources":["serviceaccounts"],"verbs":["impersonate"]}]`, true, nil},
		{"a namespace, every ServiceAccount in it", "{names: [], namespaces: [flotilla-tenants]}",
			`[{"apiGroups":[""],"resources":["serviceaccounts"],"verbs":["impersonate"]}]`, false, []string{"flotilla-tenants"}},
		{"names in namespaces", "{names: [team-a], namespaces: [flotilla-tenants, more-tenants]}",
			`[{"apiGroups":[""],"resourceNames":["team-a"],"resources":["serviceaccounts"],"verbs":["impersonate"]}]`, false, []string{"flotilla-tenants", "more-tenants"}},
		{"any, the explicit choice", "{any: true}",
			`[{"apiGroups":[""],"resources":["serviceaccounts"],"verbs":["impersonate"]}]`, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, _, err := renderChart(loadChart(t), "flotilla-system", parseValues(t, base+tc.impersonate+"}"))
			if err != nil {
				t.Fatal(err)
			}
			cr := find(objs, "ClusterRole", "flotilla-agent")
			if cr == nil {
				t.Fatal("no ClusterRole flotilla-agent")
			}
			if got, _ := json.Marshal(cr.Object["rules"]); string(got) != tc.rule {
				t.Errorf("rules %s\nwant  %s", got, tc.rule)
			}
			if got := find(objs, "ClusterRoleBinding", "flotilla-agent") != nil; got != tc.clusterBinding {
				t.Errorf("ClusterRoleBinding flotilla-agent rendered: %v, want %v", got, tc.clusterBinding)
			}
			var namespaces []string
			for _, o := range objs {
				if o.GetKind() == "RoleBinding" && o.GetName() == "flotilla-agent-impersonate" {
					namespaces = append(namespaces, o.GetNamespace())
				}
			}
			if !slices.Equal(namespaces, tc.roleBindings) {
				t.Errorf("RoleBindings in %v, want %v", namespaces, tc.roleBindings)
			}
		})
	}
}
