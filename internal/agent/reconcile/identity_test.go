package reconcile

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

// TestIdentityBounds: a team's release may not run pods as the project's own ServiceAccount,
// nor hold a token Secret for it (either would hand the release that identity's token,
// outside the agent's kind and namespace checks), and a project may not name a ServiceAccount
// in kube-system or the agent's namespace. Each refusal names the object and the rule and
// fails the whole set before anything is written; a workload with another ServiceAccount
// applies.
func TestIdentityBounds(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	workloads := rbacv1.PolicyRule{APIGroups: []string{"apps", "batch"}, Resources: []string{"deployments", "cronjobs"}, Verbs: allConfigMapVerbs}
	core := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, Verbs: allConfigMapVerbs}
	a := newTeam(t, "ident", configMapRule(allConfigMapVerbs...), workloads, core)
	const good = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {colour: blue}
`
	deployment := func(name, sa string) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      serviceAccountName: ` + sa + `
      containers: [{name: web, image: registry.example/web:1}]
`
	}
	deployerIs := func(rule string) string {
		return "the identity the agent applies project \"" + a.ns + "\" as" + rule
	}
	for _, tc := range []struct {
		name  string
		rules *project.Rules
		extra string
		want  string
	}{
		{
			name: "a Deployment running as the project's ServiceAccount", rules: a.rules,
			extra: deployment("web", "deployer"),
			want: `deployment.apps/web in namespace "` + a.ns + `": runs pods as ServiceAccount ` + a.ns + `/deployer (spec.template.spec.serviceAccountName "deployer"), ` +
				deployerIs("; a release's workloads must use another ServiceAccount"),
		},
		{
			name: "a Pod running as it through the deprecated serviceAccount field", rules: a.rules,
			extra: `
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  serviceAccount: deployer
  containers: [{name: sh, image: registry.example/sh:1}]
`,
			want: `pod/shell in namespace "` + a.ns + `": runs pods as ServiceAccount ` + a.ns + `/deployer (spec.serviceAccount "deployer"), ` +
				deployerIs("; a release's workloads must use another ServiceAccount"),
		},
		{
			name: "a CronJob running as it", rules: a.rules,
			extra: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccountName: deployer
          restartPolicy: Never
          containers: [{name: job, image: registry.example/job:1}]
`,
			want: `cronjob.batch/nightly in namespace "` + a.ns + `": runs pods as ServiceAccount ` + a.ns + `/deployer (spec.jobTemplate.spec.template.spec.serviceAccountName "deployer"), ` +
				deployerIs("; a release's workloads must use another ServiceAccount"),
		},
		{
			name: "a token Secret for it", rules: a.rules,
			extra: `
apiVersion: v1
kind: Secret
metadata:
  name: deployer-token
  annotations: {kubernetes.io/service-account.name: deployer}
type: kubernetes.io/service-account-token
`,
			want: `secret/deployer-token in namespace "` + a.ns + `": is a token Secret for ServiceAccount ` + a.ns + `/deployer, ` +
				deployerIs("; a release may not hold its token"),
		},
		{
			name: "a project whose ServiceAccount is in kube-system",
			rules: &project.Rules{Name: a.ns, Namespaces: []string{a.ns},
				ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "kube-system", Name: "replicaset-controller"}},
			want: `serviceAccount kube-system/replicaset-controller of project "` + a.ns + `" is refused: namespace kube-system: kube-* namespaces hold the cluster's own ServiceAccounts`,
		},
		{
			name: "a project whose ServiceAccount is the agent's",
			rules: &project.Rules{Name: a.ns, Namespaces: []string{a.ns},
				ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "flotilla-system", Name: "flotilla-agent"}},
			want: `serviceAccount flotilla-system/flotilla-agent of project "` + a.ns + `" is refused: namespace flotilla-system: it is the agent's namespace`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName("ident")
			docs := good
			if tc.extra != "" {
				docs += "---\n" + tc.extra
			}
			res, err := r.Reconcile(t.Context(), parse(t, a.ns, docs), Options{Name: name, Namespace: a.ns, Project: tc.rules, Prune: true})
			if !IsOutOfBounds(err) {
				t.Fatalf("err = %v, want objects refused by the project\n%s", err, res)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") {
				t.Errorf("error %q\nlacks %q and \"nothing applied\"", err, tc.want)
			}
			if res.Requests.Writes != 0 || res.Requests.DryRuns != 0 {
				t.Errorf("a refused set sent %d writes and %d dry-runs, want none", res.Requests.Writes, res.Requests.DryRuns)
			}
			if configMapExists(t, a.ns, "settings") {
				t.Error("the set's allowed object was applied beside the refused one")
			}
			if configMapExists(t, "flotilla-system", inventoryConfigMapName(name)) {
				t.Error("a refused set has an inventory")
			}
		})
	}

	t.Run("the agent's own namespace, when it runs elsewhere", func(t *testing.T) {
		rules := &project.Rules{Name: a.ns, Namespaces: []string{a.ns},
			ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: "agents", Name: "flotilla-agent"}}
		err := checkBounds(nil, rules, "flotilla-system", "agents")
		want := `serviceAccount agents/flotilla-agent of project "` + a.ns + `" is refused: namespace agents: it is the agent's namespace`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	})

	t.Run("a Deployment with another ServiceAccount applies", func(t *testing.T) {
		res := mustReconcile(t, r, parse(t, a.ns, good+"---\n"+deployment("api", "web")), Options{Name: uniqueName("ident"), Namespace: a.ns, Project: a.rules})
		if got := actions(res)["deployment.apps/api"]; got != Created {
			t.Errorf("deployment api: %s, want created\n%s", got, res)
		}
		if _, err := clientset(t).AppsV1().Deployments(a.ns).Get(t.Context(), "api", metav1.GetOptions{}); err != nil {
			t.Errorf("deployment api: %v", err)
		}
	})

	t.Run("the platform project may run pods as any ServiceAccount", func(t *testing.T) {
		obj := parse(t, a.ns, deployment("web", "deployer"))[0]
		obj.SetNamespace(a.ns)
		it := &item{ref: ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: a.ns, Name: "web"}, desired: obj, namespaced: true}
		platform := &project.Rules{Name: v1alpha1.ProjectPlatform, Namespaces: []string{"*"}, Allow: []v1alpha1.GroupKind{{Group: "*", Kind: "*"}},
			ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: a.ns, Name: "deployer"}}
		for _, rules := range []*project.Rules{nil, platform} {
			if err := checkBounds([]*item{it}, rules, "flotilla-system"); err != nil {
				t.Errorf("platform: %v", err)
			}
		}
	})
}
