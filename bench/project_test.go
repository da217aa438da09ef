package bench

import (
	"fmt"
	"sort"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/project"
)

// BenchmarkProjectApply measures what a project costs at the agent: the check of every object
// against the project's rules, and applying, reading and recording as the project's
// ServiceAccount (impersonation, judged by the API server's RBAC). The agent runs as it does
// when deployed: with its own ServiceAccount's token, bound to cluster-admin as
// deploy/agent/platform-admin.yaml does. In one run against one fresh real API server, the
// reconcile engine the agent runs applies 1,000 new ConfigMaps into a fresh namespace, for a
// release without a project and for one with a project, nine times each in alternating
// order, and reports the median rate of each and the median of the rounds' ratios of the rate
// with a project to the rate without (goal: with/without >= 0.9),
// then the time of an unchanged re-reconcile each way. For reference it also reports the rate
// without a project as system:masters, which RBAC never evaluates.
//
//	go test -run '^$' -bench ProjectApply -benchtime 1x ./bench
func BenchmarkProjectApply(b *testing.B) {
	const n, rounds = 1000, 9
	b.ReportAllocs()
	for b.Loop() {
		c, err := localcluster.Start(b.Context(), localcluster.Options{Name: "bench-project"})
		if err != nil {
			b.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(unlimited(c))
		masters, err := reconcile.New(c.RESTConfig(), reconcile.Config{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		r, err := reconcile.New(agentConfig(b, c, cs), reconcile.Config{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		var plain, projected, plainAgain, projectedAgain, asMasters []time.Duration
		for round := range rounds {
			ns := fmt.Sprintf("masters-%d", round)
			createNamespace(b, cs, ns)
			asMasters = append(asMasters, timeReconcile(b, masters, configMaps(n), reconcile.Options{Name: ns, Namespace: ns}, n))

			without := func() {
				ns := fmt.Sprintf("plain-%d", round)
				createNamespace(b, cs, ns)
				opts := reconcile.Options{Name: ns, Namespace: ns}
				plain = append(plain, timeReconcile(b, r, configMaps(n), opts, n))
				plainAgain = append(plainAgain, timeReconcile(b, r, configMaps(n), opts, 0))
			}
			with := func() {
				ns := fmt.Sprintf("team-%d", round)
				opts := reconcile.Options{Name: ns, Namespace: ns, Project: teamProject(b, cs, ns)}
				projected = append(projected, timeReconcile(b, r, configMaps(n), opts, n))
				projectedAgain = append(projectedAgain, timeReconcile(b, r, configMaps(n), opts, 0))
			}
			// Alternate which goes first, so that neither always meets a fuller etcd.
			if round%2 == 0 {
				without()
				with()
			} else {
				with()
				without()
			}
		}
		rate := func(d time.Duration) float64 { return n / d.Seconds() }
		p, q := median(plain), median(projected)
		b.ReportMetric(rate(p), "without-obj/s")
		b.ReportMetric(rate(q), "with-project-obj/s")
		// The ratio of each round's pair, taken close together in time, then their median: the
		// machine's load drifts more between rounds than within one.
		ratios := make([]float64, rounds)
		for i := range ratios {
			ratios[i] = plain[i].Seconds() / projected[i].Seconds()
		}
		sort.Float64s(ratios)
		b.ReportMetric(ratios[rounds/2], "with/without")
		b.ReportMetric(rate(median(asMasters)), "masters-obj/s")
		b.ReportMetric(median(plainAgain).Seconds(), "without-unchanged-s")
		b.ReportMetric(median(projectedAgain).Seconds(), "with-project-unchanged-s")
		b.Logf("apply of %d ConfigMaps, each round: without a project %v, with one %v, as system:masters %v; unchanged: %v, %v",
			n, plain, projected, asMasters, plainAgain, projectedAgain)
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// timeReconcile reconciles objs and checks it wrote at least wantWrites times (0: none).
func timeReconcile(b *testing.B, r *reconcile.Reconciler, objs []*unstructured.Unstructured, opts reconcile.Options, wantWrites int64) time.Duration {
	b.Helper()
	var res *reconcile.Result
	d := timeIt(func() {
		var err error
		if res, err = r.Reconcile(b.Context(), objs, opts); err != nil {
			b.Fatalf("reconcile %s: %v", opts.Name, err)
		}
	})
	if got := res.Requests.Writes; (wantWrites == 0 && got != 0) || got < wantWrites {
		b.Fatalf("reconcile %s wrote %d times, want %d", opts.Name, got, wantWrites)
	}
	return d
}

func configMaps(n int) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(fmt.Sprintf("cm-%04d", i))
		data := map[string]any{}
		for k, v := range configMapData(i) {
			data[k] = v
		}
		u.Object["data"] = data
		objs[i] = u
	}
	return objs
}

// agentConfig is a client configuration for the agent's own ServiceAccount,
// flotilla-system/flotilla-agent, bound to cluster-admin as platform-admin.yaml binds it.
func agentConfig(b *testing.B, c *localcluster.Cluster, cs *kubernetes.Clientset) *rest.Config {
	b.Helper()
	ctx := b.Context()
	createNamespace(b, cs, "flotilla-system")
	if _, err := cs.CoreV1().ServiceAccounts("flotilla-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent-platform-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "flotilla-system", Name: "flotilla-agent"}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts("flotilla-system").CreateToken(ctx, "flotilla-agent", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := c.RESTConfig()
	cfg.BearerToken = tok.Status.Token
	waitAllowed(b, cs, "system:serviceaccount:flotilla-system:flotilla-agent",
		authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"},
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps"})
	return cfg
}

// waitAllowed waits until the API server's authorizer allows user every one of attrs: a new
// binding reaches its RBAC cache within a moment.
func waitAllowed(b *testing.B, cs *kubernetes.Clientset, user string, attrs ...authorizationv1.ResourceAttributes) {
	b.Helper()
	eventually.Within(b, 30*time.Second, func() error {
		for _, a := range attrs {
			sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(b.Context(), &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("%s may not yet %s %s in namespace %q (%s)", user, a.Verb, a.Resource, a.Namespace, sar.Status.Reason)
			}
		}
		return nil
	})
}

func createNamespace(b *testing.B, cs *kubernetes.Clientset, ns string) {
	b.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// teamProject makes namespace ns with a ServiceAccount that a Role allows to manage
// ConfigMaps there, and returns a project bounded to ns that applies as it.
func teamProject(b *testing.B, cs *kubernetes.Clientset, ns string) *project.Rules {
	b.Helper()
	createNamespace(b, cs, ns)
	ctx := b.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitAllowed(b, cs, "system:serviceaccount:"+ns+":deployer",
		authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "configmaps"})
	return &project.Rules{Name: ns, Namespaces: []string{ns},
		ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: ns, Name: "deployer"}}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
