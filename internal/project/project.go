package project

import (
	"github.com/flotilla/flotilla/api/v1alpha1"
)

// Rules are what one project allows its releases' objects, as the hub sends them to agents
// in each assignment. The JSON form is part of the hub's stored desired state.
type Rules struct {
	// Name of the project.
	Name string `json:"name"`
	// Namespaces objects may live in: names and globs with "*". Empty: none.
	Namespaces []string             `json:"namespaces,omitempty"`
	Allow      []v1alpha1.GroupKind `json:"allow,omitempty"`
	Deny       []v1alpha1.GroupKind `json:"deny,omitempty"`
	// ServiceAccount the agent impersonates for the project's objects; nil: the agent's own
	// identity (only the platform project may have none).
	ServiceAccount *v1alpha1.ServiceAccountRef `json:"serviceAccount,omitempty"`
}

// FromSpec returns the rules of the project named name.
func FromSpec(name string, spec v1alpha1.ProjectSpec) Rules {
	r := Rules{
		Name:       name,
		Namespaces: clone(spec.Namespaces),
		Allow:      clone(spec.Kinds.Allow),
		Deny:       clone(spec.Kinds.Deny),
	}
	if sa := spec.ServiceAccount; sa != nil {
		c := *sa
		r.ServiceAccount = &c
	}
	return r
}

func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append([]T(nil), s...)
}

// Escalating are the kinds denied unless allowed by exact group and kind: RBAC kinds that
// could grant more than the project holds, admission webhooks and policies that could
// change or refuse other teams' objects, and CustomResourceDefinitions, which change the API
// of the whole cluster.
var Escalating = []v1alpha1.GroupKind{
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
}

// clusterWide are the escalating kinds no project but platform may have: they grant rights
// in every namespace.
func clusterWide(group, kind string) bool {
	return group == "rbac.authorization.k8s.io" && (kind == "ClusterRole" || kind == "ClusterRoleBinding")
}

// IsEscalating reports whether group/kind is one of [Escalating].
func IsEscalating(group, kind string) bool {
	for _, gk := range Escalating {
		if gk.Group == group && gk.Kind == kind {
			return true
		}
	}
	return false
}

// AllowsKind reports whether objects of group/kind (group "" is the core group) may be
// applied for the project; namespaced says whether the kind is namespaced, as the cluster's
// API discovery says. The rules are in the package documentation.
func (r Rules) AllowsKind(group, kind string, namespaced bool) bool {
	return r.KindRule(group, kind, namespaced) == ""
}

// KindRule is AllowsKind with the reason: "" when the kind is allowed, otherwise the rule that
// denies it, for an error message ("kind is denied by project team-a's kinds.deny").
func (r Rules) KindRule(group, kind string, namespaced bool) string {
	for _, d := range r.Deny {
		if matchGroupKind(d, group, kind) {
			return "denied by the project's kinds.deny"
		}
	}
	if IsEscalating(group, kind) {
		if clusterWide(group, kind) && r.Name != v1alpha1.ProjectPlatform {
			return "could grant rights beyond the project, which only the platform project may do"
		}
		for _, a := range r.Allow {
			if a.Group == group && a.Kind == kind {
				return ""
			}
		}
		return "could grant rights beyond the project or change the cluster's API or admission, and is denied unless kinds.allow names it exactly"
	}
	if !namespaced {
		for _, a := range r.Allow {
			if a.Kind == kind && (a.Group == "*" || a.Group == group) {
				return ""
			}
		}
		return "is cluster-scoped, and denied unless kinds.allow names it"
	}
	return ""
}

func matchGroupKind(p v1alpha1.GroupKind, group, kind string) bool {
	return (p.Group == "*" || p.Group == group) && (p.Kind == "*" || p.Kind == kind)
}

// AllowsNamespace reports whether objects may live in namespace ns.
func (r Rules) AllowsNamespace(ns string) bool {
	for _, p := range r.Namespaces {
		if Glob(p, ns) {
			return true
		}
	}
	return false
}

// Glob reports whether s matches pattern, where "*" matches any run of characters (the empty
// one too) and every other character itself: [v1alpha1.Glob], which validation uses too.
func Glob(pattern, s string) bool { return v1alpha1.Glob(pattern, s) }
