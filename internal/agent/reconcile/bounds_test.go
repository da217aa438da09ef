package reconcile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/project"
)

func TestCheckBounds(t *testing.T) {
	t.Parallel()
	teamA := &project.Rules{Name: "team-a", Namespaces: []string{"team-a", "team-a-*"},
		Allow: []v1alpha1.GroupKind{{Group: "", Kind: "Namespace"}}}
	obj := func(group, kind, ns, name string, namespaced bool) *item {
		return &item{ref: ObjectRef{Group: group, Version: "v1", Kind: kind, Namespace: ns, Name: name}, namespaced: namespaced}
	}
	for _, tc := range []struct {
		name  string
		rules *project.Rules
		item  *item
		want  string // "" when allowed
	}{
		{"a ConfigMap in the project's namespace", teamA, obj("", "ConfigMap", "team-a", "web", true), ""},
		{"a ConfigMap in a namespace matching a glob", teamA, obj("", "ConfigMap", "team-a-dev", "web", true), ""},
		{"a ConfigMap in another team's namespace", teamA, obj("", "ConfigMap", "team-b", "web", true),
			`configmap/web in namespace "team-b": namespace team-b is not one of project "team-a"'s namespaces (team-a, team-a-*)`},
		{"a ClusterRoleBinding", teamA, obj("rbac.authorization.k8s.io", "ClusterRoleBinding", "", "admin", false),
			`clusterrolebinding.rbac.authorization.k8s.io/admin: kind rbac.authorization.k8s.io/ClusterRoleBinding is not allowed by project "team-a": it could grant rights beyond the project, which only the platform project may do`},
		{"a cluster-scoped kind the project does not allow", teamA, obj("storage.k8s.io", "StorageClass", "", "fast", false),
			`storageclass.storage.k8s.io/fast: kind storage.k8s.io/StorageClass is not allowed by project "team-a": it is cluster-scoped, and denied unless kinds.allow names it`},
		{"a Namespace the project allows, named as one of its namespaces", teamA, obj("", "Namespace", "", "team-a-dev", false), ""},
		{"a Namespace the project allows, named as another team's", teamA, obj("", "Namespace", "", "team-b", false),
			`namespace/team-b: namespace team-b is not one of project "team-a"'s namespaces (team-a, team-a-*)`},
		{"the Namespace that createNamespace adds is held to the namespace rule only",
			&project.Rules{Name: "team-a", Namespaces: []string{"team-a"}}, func() *item {
				it := obj("", "Namespace", "", "team-a", false)
				it.untracked = true
				return it
			}(), ""},
		{"an object in the inventory namespace, for a project", teamA, obj("", "ConfigMap", "flotilla-system", "inventory-web", true),
			`configmap/inventory-web in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`},
		{"an object in the inventory namespace, for the platform project", nil, obj("", "ConfigMap", "flotilla-system", "inventory-web", true),
			`configmap/inventory-web in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`},
		{"the inventory Namespace itself, for the platform project", nil, obj("", "Namespace", "", "flotilla-system", false),
			`namespace/flotilla-system: namespace flotilla-system holds the agent's inventories; only the agent manages it`},
		{"anything else, for the platform project", nil, obj("rbac.authorization.k8s.io", "ClusterRoleBinding", "", "admin", false), ""},
		{"a project with no namespaces", &project.Rules{Name: "empty"}, obj("", "ConfigMap", "default", "web", true),
			`configmap/web in namespace "default": namespace default is not one of project "empty"'s namespaces (none)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBounds([]*item{tc.item}, tc.rules, "flotilla-system")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var be *BoundsError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a *BoundsError", err)
			}
			if d := cmp.Diff([]string{tc.want}, be.Problems); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
}

// team is a project with a namespace of its own and a ServiceAccount "deployer" in it, which
// a real Role and RoleBinding allow what rules say there, and nothing anywhere else.
type team struct {
	ns    string
	sa    ServiceAccount
	rules *project.Rules
}

func newTeam(t *testing.T, prefix string, rules ...rbacv1.PolicyRule) team {
	t.Helper()
	cs := clientset(t)
	ns := uniqueName(prefix)
	tm := team{ns: ns, sa: ServiceAccount{Namespace: ns, Name: "deployer"}}
	tm.rules = &project.Rules{Name: ns, Namespaces: []string{ns},
		ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: ns, Name: "deployer"}}
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tm.setRole(t, rules...)
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return tm
}

// setRole creates or replaces the team's Role.
func (tm team) setRole(t *testing.T, rules ...rbacv1.PolicyRule) {
	t.Helper()
	roles := clientset(t).RbacV1().Roles(tm.ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}, Rules: rules}
	old, err := roles.Get(t.Context(), "deployer", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(t.Context(), role, metav1.CreateOptions{})
	case err == nil:
		role.ResourceVersion = old.ResourceVersion
		_, err = roles.Update(t.Context(), role, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func configMapRule(verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}
}

var allConfigMapVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func configMapExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestProjectBounds: a set with one object outside its project fails as a whole, naming the
// object and the rule, before anything is read as the ServiceAccount or written; a set within
// the bounds converges.
func TestProjectBounds(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	a := newTeam(t, "team-a", configMapRule(allConfigMapVerbs...))
	b := newTeam(t, "team-b", configMapRule(allConfigMapVerbs...))
	const good = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {colour: blue}
`
	for _, tc := range []struct {
		name   string
		rules  *project.Rules
		extra  string
		object func() bool // whether the refused object exists
		want   string
	}{
		{
			name: "a ClusterRoleBinding to cluster-admin", rules: a.rules,
			extra: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ` + a.ns + `-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, namespace: ` + a.ns + `, name: deployer}]
`,
			object: func() bool {
				_, err := clientset(t).RbacV1().ClusterRoleBindings().Get(t.Context(), a.ns+"-admin", metav1.GetOptions{})
				return err == nil
			},
			want: `clusterrolebinding.rbac.authorization.k8s.io/` + a.ns + `-admin: kind rbac.authorization.k8s.io/ClusterRoleBinding is not allowed by project "` + a.ns + `"`,
		},
		{
			name: "an object in the other team's namespace", rules: a.rules,
			extra:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: takeover, namespace: " + b.ns + "}\n",
			object: func() bool { return configMapExists(t, b.ns, "takeover") },
			want:   `configmap/takeover in namespace "` + b.ns + `": namespace ` + b.ns + ` is not one of project "` + a.ns + `"'s namespaces (` + a.ns + `)`,
		},
		{
			name: "an inventory forged in flotilla-system", rules: a.rules,
			extra:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inventory-" + b.ns + ", namespace: flotilla-system}\n",
			object: func() bool { return configMapExists(t, "flotilla-system", "inventory-"+b.ns) },
			want:   `configmap/inventory-` + b.ns + ` in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`,
		},
		{
			name: "an object in flotilla-system, for the platform project", rules: nil,
			extra:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted-" + a.ns + ", namespace: flotilla-system}\n",
			object: func() bool { return configMapExists(t, "flotilla-system", "planted-"+a.ns) },
			want:   `configmap/planted-` + a.ns + ` in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName("bounds")
			res, err := r.Reconcile(t.Context(), parse(t, a.ns, good+"---\n"+tc.extra), Options{Name: name, Namespace: a.ns, Project: tc.rules, Prune: true})
			if !IsOutOfBounds(err) {
				t.Fatalf("err = %v, want objects refused by the project\n%s", err, res)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing applied") {
				t.Errorf("error %q\nlacks %q and \"nothing applied\"", err, tc.want)
			}
			if res.Requests.Writes != 0 || res.Requests.DryRuns != 0 {
				t.Errorf("a refused set sent %d writes and %d dry-runs, want none", res.Requests.Writes, res.Requests.DryRuns)
			}
			if tc.object() {
				t.Error("the refused object exists")
			}
			if configMapExists(t, a.ns, "settings") {
				t.Error("the set's allowed object was applied beside the refused one")
			}
			if configMapExists(t, "flotilla-system", inventoryConfigMapName(name)) {
				t.Error("a refused set has an inventory")
			}
		})
	}

	t.Run("a set within the bounds converges", func(t *testing.T) {
		res := mustReconcile(t, r, parse(t, a.ns, good), Options{Name: uniqueName("bounds"), Namespace: a.ns, Project: a.rules})
		if got := actions(res)["configmap/settings"]; got != Created {
			t.Errorf("settings: %s, want created", got)
		}
	})
}

// TestImpersonation: a project's objects are applied, pruned, read and removed as its
// ServiceAccount, so that the API server's RBAC judges them; the inventory is the agent's.
func TestImpersonation(t *testing.T) {
	t.Parallel()
	r := newTestReconciler(t)
	// No delete yet: pruning must fail as the ServiceAccount would.
	a := newTeam(t, "imp", configMapRule("get", "list", "watch", "create", "update", "patch"))
	name := uniqueName("imp")
	opts := Options{Name: name, Namespace: a.ns, Project: a.rules, Prune: true}
	two := parse(t, a.ns, twoConfigMaps)

	t.Run("applies as the ServiceAccount and keeps the inventory as the agent", func(t *testing.T) {
		res := mustReconcile(t, r, two, opts)
		if d := cmp.Diff(map[string]Action{"configmap/alpha": Created, "configmap/beta": Created}, actions(res)); d != "" {
			t.Errorf("actions (-want +got):\n%s", d)
		}
		// The ServiceAccount has no right in flotilla-system: the agent wrote the inventory.
		cm, err := clientset(t).CoreV1().ConfigMaps("flotilla-system").Get(t.Context(), inventoryConfigMapName(name), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("inventory: %v", err)
		}
		if got, want := cm.Annotations[ServiceAccountAnnotation], a.ns+"/deployer"; got != want {
			t.Errorf("inventory annotation %s = %q, want %q", ServiceAccountAnnotation, got, want)
		}
	})

	t.Run("an RBAC denial names the ServiceAccount, the verb and the object, and applies nothing", func(t *testing.T) {
		withSecret := twoConfigMaps + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: gamma}
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {key: value}
`
		a.setRole(t, configMapRule("get", "list", "watch", "create", "update", "patch"),
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
		res, err := r.Reconcile(t.Context(), parse(t, a.ns, withSecret), opts)
		if err == nil {
			t.Fatalf("a Secret the ServiceAccount may not write was applied\n%s", res)
		}
		for _, want := range []string{
			fmt.Sprintf(`assignment %q (project %q, as ServiceAccount %s/deployer)`, name, a.ns, a.ns),
			`secret/token in namespace "` + a.ns + `"`,
			`User "system:serviceaccount:` + a.ns + `:deployer" cannot patch resource "secrets"`,
			"nothing applied",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		if configMapExists(t, a.ns, "gamma") {
			t.Error("gamma was applied beside the denied Secret")
		}
	})

	a.setRole(t, configMapRule("get", "list", "watch", "create", "update", "patch"))
	t.Run("prunes as the ServiceAccount", func(t *testing.T) {
		res, err := r.Reconcile(t.Context(), two[:1], opts)
		if err == nil {
			t.Fatalf("beta was pruned although the ServiceAccount may not delete it\n%s", res)
		}
		if want := `User "system:serviceaccount:` + a.ns + `:deployer" cannot delete resource "configmaps"`; !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
		if !configMapExists(t, a.ns, "beta") {
			t.Error("beta is gone")
		}
		a.setRole(t, configMapRule(allConfigMapVerbs...))
		res = mustReconcile(t, r, two[:1], opts)
		if got := actions(res)["configmap/beta"]; got != Pruned {
			t.Errorf("beta: %s, want pruned once the ServiceAccount may delete it", got)
		}
	})

	t.Run("removes as the ServiceAccount the inventory names", func(t *testing.T) {
		a.setRole(t, configMapRule("get", "list", "watch", "create", "update", "patch"))
		_, err := r.Remove(t.Context(), name)
		if want := `User "system:serviceaccount:` + a.ns + `:deployer" cannot delete resource "configmaps"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Remove: err = %v, want a denial naming the ServiceAccount (%q)", err, want)
		}
		a.setRole(t, configMapRule(allConfigMapVerbs...))
		if _, err := r.Remove(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		if configMapExists(t, a.ns, "alpha") || configMapExists(t, "flotilla-system", inventoryConfigMapName(name)) {
			t.Error("Remove left alpha or the inventory")
		}
	})
}
