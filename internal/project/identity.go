package project

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

// ServiceAccountRule says why the project's ServiceAccount may not be used by the agent, or
// "" when it may: the namespace rule the hub's validation applies
// ([v1alpha1.ReservedServiceAccountNamespace]), with the agent's own namespaces, which only
// the agent knows for sure.
func (r Rules) ServiceAccountRule(agentNamespaces ...string) string {
	sa := r.ServiceAccount
	if sa == nil || sa.Name == "" {
		return ""
	}
	if sa.Namespace == "" {
		return fmt.Sprintf("serviceAccount %s of project %q is refused: it names no namespace", sa.Name, r.Name)
	}
	if why := v1alpha1.ReservedServiceAccountNamespace(sa.Namespace, agentNamespaces...); why != "" {
		return fmt.Sprintf("serviceAccount %s/%s of project %q is refused: namespace %s: %s", sa.Namespace, sa.Name, r.Name, sa.Namespace, why)
	}
	return ""
}

// IdentityRule says why obj, in namespace ns (after defaulting), may not be applied for a
// team's project, or "" when it may: it would hand the project's own ServiceAccount, the
// identity the agent impersonates for the whole project, to something the release runs.
// A Pod running as it, or a token Secret for it, holds that ServiceAccount's token directly,
// outside the agent's kind and namespace checks (and so can write what the project's RBAC
// allows into any namespace, or a RoleBinding to itself).
//
// Refused:
//   - a workload whose pod template runs as the ServiceAccount: a Pod's spec, a PodTemplate's
//     template, and any object with spec.template.spec (Deployment, StatefulSet, DaemonSet,
//     ReplicaSet, Job, and custom workloads shaped like them) or
//     spec.jobTemplate.spec.template.spec (CronJob), in the ServiceAccount's namespace, with
//     serviceAccountName (or the deprecated serviceAccount) naming it. An empty name is
//     "default", as the API server defaults it;
//   - a Secret of type kubernetes.io/service-account-token for it: annotation
//     kubernetes.io/service-account.name naming it, in its namespace.
//
// A TokenRequest is a subresource of the ServiceAccount, never an object of a release; a Role
// or RoleBinding granting the ServiceAccount more is an escalating kind (see [Escalating]),
// denied unless the project's kinds.allow names it exactly. The platform project, and a
// project without a ServiceAccount, are not bound by this.
func (r Rules) IdentityRule(obj *unstructured.Unstructured, ns string) string {
	sa := r.ServiceAccount
	if r.Name == v1alpha1.ProjectPlatform || sa == nil || sa.Name == "" || ns != sa.Namespace {
		return ""
	}
	group := obj.GroupVersionKind().Group
	kind := obj.GetKind()
	if group == "" && kind == "Secret" {
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		if t == "kubernetes.io/service-account-token" && obj.GetAnnotations()["kubernetes.io/service-account.name"] == sa.Name {
			return fmt.Sprintf("is a token Secret for ServiceAccount %s/%s, the identity the agent applies project %q as; a release may not hold its token", sa.Namespace, sa.Name, r.Name)
		}
		return ""
	}
	var paths [][]string
	switch {
	case group == "" && kind == "Pod":
		paths = [][]string{{"spec"}}
	case group == "" && kind == "PodTemplate":
		paths = [][]string{{"template", "spec"}}
	default:
		paths = [][]string{{"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}}
	}
	for _, p := range paths {
		// Every object of every team release passes here: read the pod spec in place, never
		// a deep copy of it (NestedMap).
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, p...)
		spec, ok := v.(map[string]any)
		if err != nil || !found || !ok {
			continue
		}
		if field, name := podServiceAccount(spec); name == sa.Name {
			return fmt.Sprintf("runs pods as ServiceAccount %s/%s (%s.%s), the identity the agent applies project %q as; a release's workloads must use another ServiceAccount", sa.Namespace, sa.Name, strings.Join(p, "."), field, r.Name)
		}
	}
	return ""
}

// podServiceAccount is the ServiceAccount a pod spec runs as, as the API server decides it,
// and the field that says so: serviceAccountName, else the deprecated serviceAccount, else
// "default" (field "serviceAccountName", unset).
func podServiceAccount(spec map[string]any) (field, name string) {
	for _, f := range []string{"serviceAccountName", "serviceAccount"} {
		if s, ok := spec[f].(string); ok && s != "" {
			return fmt.Sprintf("%s %q", f, s), s
		}
	}
	return "serviceAccountName unset, so \"default\"", "default"
}
