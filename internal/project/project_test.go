package project

import (
	"testing"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

func TestAllowsKind(t *testing.T) {
	t.Parallel()
	const rbac, adm, crd = "rbac.authorization.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io"
	team := Rules{Name: "team-a"}
	tests := []struct {
		name       string
		rules      Rules
		group      string
		kind       string
		namespaced bool
		want       bool
	}{
		{"a namespaced kind is allowed unless denied", team, "apps", "Deployment", true, true},
		{"a core namespaced kind", team, "", "ConfigMap", true, true},
		{"a namespaced kind denied by name", Rules{Deny: []v1alpha1.GroupKind{{Group: "", Kind: "Secret"}}}, "", "Secret", true, false},
		{"deny by group wildcard", Rules{Deny: []v1alpha1.GroupKind{{Group: "*", Kind: "Secret"}}}, "", "Secret", true, false},
		{"deny by kind wildcard", Rules{Deny: []v1alpha1.GroupKind{{Group: "networking.k8s.io", Kind: "*"}}}, "networking.k8s.io", "Ingress", true, false},
		{"deny of another group", Rules{Deny: []v1alpha1.GroupKind{{Group: "networking.k8s.io", Kind: "*"}}}, "apps", "Deployment", true, true},
		{"a cluster-scoped kind is denied", team, "", "Namespace", false, false},
		{"a cluster-scoped kind allowed by name", Rules{Allow: []v1alpha1.GroupKind{{Group: "", Kind: "Namespace"}}}, "", "Namespace", false, true},
		{"a cluster-scoped kind allowed with any group", Rules{Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "Namespace"}}}, "", "Namespace", false, true},
		{"a cluster-scoped kind of another group", Rules{Allow: []v1alpha1.GroupKind{{Group: "example.com", Kind: "Namespace"}}}, "", "Namespace", false, false},
		{"a wildcard kind allows no cluster-scoped kind", Rules{Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "*"}}}, "storage.k8s.io", "StorageClass", false, false},
		{"deny wins over allow", Rules{Allow: []v1alpha1.GroupKind{{Kind: "Namespace"}}, Deny: []v1alpha1.GroupKind{{Group: "*", Kind: "*"}}}, "", "Namespace", false, false},
		{"Role is denied by default", team, rbac, "Role", true, false},
		{"RoleBinding is denied by default", team, rbac, "RoleBinding", true, false},
		{"Role allowed by exact name", Rules{Name: "team-a", Allow: []v1alpha1.GroupKind{{Group: rbac, Kind: "Role"}}}, rbac, "Role", true, true},
		{"Role is not allowed by a wildcard", Rules{Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "Role"}}}, rbac, "Role", true, false},
		{"Role is not allowed by a kind wildcard", Rules{Allow: []v1alpha1.GroupKind{{Group: rbac, Kind: "*"}}}, rbac, "Role", true, false},
		{"ClusterRoleBinding is denied to a team even when allowed", Rules{Name: "team-a", Allow: []v1alpha1.GroupKind{{Group: rbac, Kind: "ClusterRoleBinding"}}}, rbac, "ClusterRoleBinding", false, false},
		{"ClusterRole is denied to a team even when allowed", Rules{Name: "team-a", Allow: []v1alpha1.GroupKind{{Group: rbac, Kind: "ClusterRole"}}}, rbac, "ClusterRole", false, false},
		{"a platform project may allow ClusterRole by name", Rules{Name: "platform", Allow: []v1alpha1.GroupKind{{Group: rbac, Kind: "ClusterRole"}}}, rbac, "ClusterRole", false, true},
		{"a platform project denies ClusterRole by default", Rules{Name: "platform"}, rbac, "ClusterRole", false, false},
		{"webhooks are denied", Rules{Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "*"}}}, adm, "ValidatingWebhookConfiguration", false, false},
		{"a mutating webhook allowed by exact name", Rules{Allow: []v1alpha1.GroupKind{{Group: adm, Kind: "MutatingWebhookConfiguration"}}}, adm, "MutatingWebhookConfiguration", false, true},
		{"an admission policy is denied", team, adm, "ValidatingAdmissionPolicy", false, false},
		{"an admission policy binding is denied", team, adm, "ValidatingAdmissionPolicyBinding", false, false},
		{"a CRD is denied", Rules{Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "CustomResourceDefinition"}}}, crd, "CustomResourceDefinition", false, false},
		{"a CRD allowed by exact name", Rules{Allow: []v1alpha1.GroupKind{{Group: crd, Kind: "CustomResourceDefinition"}}}, crd, "CustomResourceDefinition", false, true},
		{"a kind named like an RBAC kind in another group is ordinary", team, "example.com", "Role", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.rules.AllowsKind(tt.group, tt.kind, tt.namespaced); got != tt.want {
				t.Errorf("AllowsKind(%q, %q, %v) = %v, want %v (rule: %q)", tt.group, tt.kind, tt.namespaced, got, tt.want,
					tt.rules.KindRule(tt.group, tt.kind, tt.namespaced))
			}
			if got := tt.rules.KindRule(tt.group, tt.kind, tt.namespaced) == ""; got != tt.want {
				t.Errorf("KindRule disagrees with AllowsKind")
			}
		})
	}
}

func TestAllowsNamespace(t *testing.T) {
	t.Parallel()
	r := Rules{Namespaces: []string{"team-a", "team-a-*", "*-sandbox", "pre-*-post"}}
	tests := []struct {
		ns   string
		want bool
	}{
		{"team-a", true},
		{"team-a-web", true},
		{"team-a-", true},
		{"team-ab", false},
		{"team-b", false},
		{"x-sandbox", true},
		{"sandbox", false},
		{"pre-x-post", true},
		{"pre-post", false},
		{"pre--post", true},
		{"", false},
		{"flotilla-system", false},
	}
	for _, tt := range tests {
		if got := r.AllowsNamespace(tt.ns); got != tt.want {
			t.Errorf("AllowsNamespace(%q) = %v, want %v", tt.ns, got, tt.want)
		}
	}
	if (Rules{}).AllowsNamespace("default") {
		t.Error("rules without namespaces allow one")
	}
	if !(Rules{Namespaces: []string{"*"}}).AllowsNamespace("anything") {
		t.Error(`"*" does not allow every namespace`)
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"a", "a", true},
		{"a", "b", false},
		{"*", "", true},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "acb", false},
		{"**", "x", true},
	}
	for _, tt := range tests {
		if got := Glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}
