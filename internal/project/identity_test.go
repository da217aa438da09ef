package project

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla/flotilla/api/v1alpha1"
)

func TestIdentityRule(t *testing.T) {
	t.Parallel()
	team := func(saName string) Rules {
		return Rules{Name: "team-a", Namespaces: []string{"team-a"},
			ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "tenants", Name: saName}}
	}
	podSpec := func(sa string) string { return "{" + sa + "containers: [{name: c, image: i}]}" }
	const as = `, the identity the agent applies project "team-a" as; a release's workloads must use another ServiceAccount`
	for _, tc := range []struct {
		name  string
		rules Rules
		ns    string
		obj   string
		want  string
	}{
		{"a Deployment as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: apps/v1, kind: Deployment, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccountName "deployer")` + as},
		{"a StatefulSet as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: apps/v1, kind: StatefulSet, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccountName "deployer")` + as},
		{"a DaemonSet as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: apps/v1, kind: DaemonSet, spec: {template: {spec: " + podSpec("serviceAccount: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccount "deployer")` + as},
		{"a ReplicaSet as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: apps/v1, kind: ReplicaSet, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccountName "deployer")` + as},
		{"a Job as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: batch/v1, kind: Job, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccountName "deployer")` + as},
		{"a CronJob as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: batch/v1, kind: CronJob, spec: {jobTemplate: {spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.jobTemplate.spec.template.spec.serviceAccountName "deployer")` + as},
		{"a custom workload shaped like a Deployment", team("deployer"), "tenants",
			"{apiVersion: argoproj.io/v1alpha1, kind: Rollout, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}",
			`runs pods as ServiceAccount tenants/deployer (spec.template.spec.serviceAccountName "deployer")` + as},
		{"a Pod as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: Pod, spec: " + podSpec("serviceAccountName: deployer, ") + "}",
			`runs pods as ServiceAccount tenants/deployer (spec.serviceAccountName "deployer")` + as},
		{"a PodTemplate as the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: PodTemplate, template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}",
			`runs pods as ServiceAccount tenants/deployer (template.spec.serviceAccountName "deployer")` + as},
		{"a Pod with no ServiceAccount, when the project's is default", team("default"), "tenants",
			"{apiVersion: v1, kind: Pod, spec: " + podSpec("") + "}",
			`runs pods as ServiceAccount tenants/default (spec.serviceAccountName unset, so "default")` + as},
		{"a token Secret for the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: Secret, type: kubernetes.io/service-account-token, metadata: {annotations: {kubernetes.io/service-account.name: deployer}}}",
			`is a token Secret for ServiceAccount tenants/deployer, the identity the agent applies project "team-a" as; a release may not hold its token`},

		{"a Deployment with another ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: apps/v1, kind: Deployment, spec: {template: {spec: " + podSpec("serviceAccountName: web, ") + "}}}", ""},
		{"a Pod with no ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: Pod, spec: " + podSpec("") + "}", ""},
		{"a Deployment as a ServiceAccount of the same name in another namespace", team("deployer"), "team-a",
			"{apiVersion: apps/v1, kind: Deployment, spec: {template: {spec: " + podSpec("serviceAccountName: deployer, ") + "}}}", ""},
		{"a token Secret for another ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: Secret, type: kubernetes.io/service-account-token, metadata: {annotations: {kubernetes.io/service-account.name: web}}}", ""},
		{"an Opaque Secret naming the ServiceAccount", team("deployer"), "tenants",
			"{apiVersion: v1, kind: Secret, type: Opaque, metadata: {annotations: {kubernetes.io/service-account.name: deployer}}}", ""},
		{"the platform project", Rules{Name: v1alpha1.ProjectPlatform, ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "tenants", Name: "deployer"}}, "tenants",
			"{apiVersion: v1, kind: Pod, spec: " + podSpec("serviceAccountName: deployer, ") + "}", ""},
		{"a project without a ServiceAccount", Rules{Name: "team-a"}, "tenants",
			"{apiVersion: v1, kind: Pod, spec: " + podSpec("serviceAccountName: deployer, ") + "}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tc.obj), &m); err != nil {
				t.Fatal(err)
			}
			if got := tc.rules.IdentityRule(&unstructured.Unstructured{Object: m}, tc.ns); got != tc.want {
				t.Errorf("IdentityRule = %q\nwant            %q", got, tc.want)
			}
		})
	}
}

func TestServiceAccountRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ns, name string
		agent    []string
		want     string
	}{
		{"flotilla-tenants", "team-a", nil, ""},
		{"kube-system", "default", nil, `serviceAccount kube-system/default of project "team-a" is refused: namespace kube-system: kube-* namespaces hold the cluster's own ServiceAccounts (controllers, kube-proxy), which a project must never act as`},
		{"kube-node-lease", "x", nil, `serviceAccount kube-node-lease/x of project "team-a" is refused: namespace kube-node-lease: kube-* namespaces hold the cluster's own ServiceAccounts (controllers, kube-proxy), which a project must never act as`},
		{"flotilla-system", "flotilla-agent", nil, `serviceAccount flotilla-system/flotilla-agent of project "team-a" is refused: namespace flotilla-system: it is the agent's namespace, whose ServiceAccounts (the agent's own among them) a project must never act as`},
		{"agents", "flotilla-agent", []string{"agents"}, `serviceAccount agents/flotilla-agent of project "team-a" is refused: namespace agents: it is the agent's namespace, whose ServiceAccounts (the agent's own among them) a project must never act as`},
		{"agents", "flotilla-agent", nil, ""},
	} {
		r := Rules{Name: "team-a", ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: tc.ns, Name: tc.name}}
		if got := r.ServiceAccountRule(tc.agent...); got != tc.want {
			t.Errorf("%s/%s (agent in %v): %q\nwant %q", tc.ns, tc.name, tc.agent, got, tc.want)
		}
	}
}
