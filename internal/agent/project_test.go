package agent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/eventually"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// newTeamNamespace makes a team's namespace with a ServiceAccount "deployer" that a real Role
// allows to manage ConfigMaps there, and returns the project rules an assignment carries.
func newTeamNamespace(t *testing.T, prefix string) *agentv1.ProjectRules {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(testCluster(t).RESTConfig())
	ns := uniqueName(prefix)
	ctx := t.Context()
	for _, err := range []error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			}}}, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
			}, metav1.CreateOptions{})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &agentv1.ProjectRules{Name: ns, Namespaces: []string{ns}, ServiceAccountNamespace: ns, ServiceAccountName: "deployer"}
}

// TestProjectsAtTheAgent: a real agent, itself allowed everything (system:masters), refuses
// every release that reaches out of its project, each alone, with an error naming the object
// and the rule, while the releases within their projects converge; and it does so again from
// its cached desired state after a restart with the hub unreachable.
func TestProjectsAtTheAgent(t *testing.T) {
	t.Parallel()
	hub := newFakeHub(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	hub.identity(stateDir, "tenancy-1")
	a, b := newTeamNamespace(t, "team-a"), newTeamNamespace(t, "team-b")
	crbName := a.Name + "-admin"
	digest := hub.addArtifact(map[string]string{
		"good/cm.yaml": configMap("good"),
		"clusteradmin/all.yaml": configMap("clusteradmin") + "---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: " + crbName + "}\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
			"subjects: [{kind: ServiceAccount, namespace: " + a.Name + ", name: deployer}]\n",
		"othernamespace/all.yaml": configMap("othernamespace") + "---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: takeover, namespace: " + b.Name + "}\n",
		"system/all.yaml": configMap("system") + "---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted, namespace: flotilla-system}\n",
	})
	assign := func(release, path string, p *agentv1.ProjectRules) *agentv1.Assignment {
		return &agentv1.Assignment{Release: release, Revision: "main@1", Digest: digest, Path: path,
			Namespace: p.Name, Prune: true, SelfHeal: true, IntervalSeconds: 1, Project: p}
	}
	goodA, goodB := uniqueName("good-a"), uniqueName("good-b")
	refused := map[string]string{ // release -> what its error must say
		uniqueName("clusteradmin"): `clusterrolebinding.rbac.authorization.k8s.io/` + crbName +
			`: kind rbac.authorization.k8s.io/ClusterRoleBinding is not allowed by project "` + a.Name + `"`,
		uniqueName("othernamespace"): `configmap/takeover in namespace "` + b.Name + `": namespace ` + b.Name +
			` is not one of project "` + a.Name + `"'s namespaces`,
		uniqueName("system"): `configmap/planted in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`,
	}
	ds := &agentv1.DesiredState{Cluster: "tenancy-1", Generation: 1, ExplicitRemovals: true,
		Assignments: []*agentv1.Assignment{assign(goodA, "good", a), assign(goodB, "good", b)}}
	paths := map[string]*agentv1.ProjectRules{"clusteradmin": a, "othernamespace": a, "system": b}
	for release := range refused {
		path := release[:strings.LastIndex(release, "-")]
		ds.Assignments = append(ds.Assignments, assign(release, path, paths[path]))
	}
	agent := startAgent(t, hub, stateDir)
	hub.publish(ds)

	phase := func(release, phase string) func(*agentv1.AssignmentStatus) bool {
		return func(st *agentv1.AssignmentStatus) bool { return st.Release == release && st.Phase == phase }
	}
	eventually.Within(t, time.Minute, hub.holds("the releases within their projects Ready, the others Failed", func() bool {
		for release := range refused {
			if hub.reported(phase(release, "Failed")) == 0 {
				return false
			}
		}
		return hub.reported(phase(goodA, "Ready")) > 0 && hub.reported(phase(goodB, "Ready")) > 0
	}))
	for release, want := range refused {
		hub.reported(func(st *agentv1.AssignmentStatus) bool {
			if st.Release == release && st.Phase == "Failed" {
				if !strings.Contains(st.Error, want) || !strings.Contains(st.Error, "nothing applied") {
					t.Errorf("%s: error %q\nlacks %q and \"nothing applied\"", release, st.Error, want)
				}
				if st.Objects != 0 || st.Created != 0 {
					t.Errorf("%s: reported %d objects, %d created; want nothing", release, st.Objects, st.Created)
				}
			}
			return false
		})
	}
	nothingApplied := func(t *testing.T) {
		t.Helper()
		for _, cm := range [][2]string{{a.Name, "clusteradmin"}, {a.Name, "othernamespace"}, {b.Name, "takeover"}, {b.Name, "system"}, {"flotilla-system", "planted"}} {
			if configMapExists(t, cm[0], cm[1]) {
				t.Errorf("ConfigMap %s/%s of a refused release exists", cm[0], cm[1])
			}
		}
		cs := kubernetes.NewForConfigOrDie(testCluster(t).RESTConfig())
		if _, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), crbName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ClusterRoleBinding %s: err = %v, want not found", crbName, err)
		}
	}
	nothingApplied(t)
	if !configMapExists(t, a.Name, "good") || !configMapExists(t, b.Name, "good") {
		t.Fatal("a release within its project was not applied")
	}

	t.Run("the rules hold from the cached desired state with the hub unreachable", func(t *testing.T) {
		agent.stop()
		hub.srv.Close()
		cs := kubernetes.NewForConfigOrDie(testCluster(t).RESTConfig())
		if err := cs.CoreV1().ConfigMaps(a.Name).Delete(t.Context(), "good", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		offline := startAgent(t, hub, stateDir)
		eventually.Within(t, time.Minute, hub.holds("the offline agent heals good-a and fails the refused releases", func() bool {
			out := scrape(t, offline.metrics)
			for release := range refused {
				if !strings.Contains(out, `flotilla_agent_reconciles_total{phase="Failed",release="`+release+`"}`) {
					return false
				}
			}
			return configMapExists(t, a.Name, "good")
		}))
		nothingApplied(t)
	})
}
