package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/hubclient"
)

// TestTenancy is issue 12's fleet: a platform release that gives two teams a namespace, a
// ServiceAccount and RBAC for ConfigMaps; each team's release within its project converges,
// applied as the team's ServiceAccount; and each of these fails alone, with a clear error,
// nothing of it applied:
//   - a team release with a ClusterRoleBinding to cluster-admin (the agent refuses it);
//   - one writing into the other team's namespace (the agent);
//   - one writing into flotilla-system (the agent);
//   - one with a Secret its ServiceAccount may not touch (the API server's RBAC, under
//     impersonation);
//   - one using a source its project does not allow (the hub, at scheduling).
func TestTenancy(t *testing.T) {
	t.Parallel()
	repoDir, otherDir := t.TempDir(), t.TempDir()
	repoURL, otherURL := "file://"+repoDir, "file://"+otherDir
	fleetYAML := fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: other}
spec:
  git: {url: %s, branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: [apps]
  namespaces: [team-a]
  serviceAccount: {namespace: team-a, name: deployer}
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-b}
spec:
  sources: [apps]
  namespaces: [team-b]
  serviceAccount: {namespace: team-b, name: deployer}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: platform-base}
spec: {source: apps, path: platform, targets: [{selector: {}}], prune: true}
`, repoURL, otherURL)
	release := func(name, project, source string) string {
		return fmt.Sprintf("---\napiVersion: flotilla.dev/v1alpha1\nkind: Release\nmetadata: {name: %s}\n"+
			"spec: {project: %s, source: %s, path: teams/%s, namespace: %s, targets: [{selector: {}}], prune: true}\n",
			name, project, source, name, project)
	}
	fleetYAML += release("a-web", "team-a", "apps") + release("b-web", "team-b", "apps") +
		release("a-admin", "team-a", "apps") + release("a-intrude", "team-a", "apps") +
		release("b-system", "team-b", "apps") + release("b-secret", "team-b", "apps") +
		release("a-foreign", "team-a", "other")

	cm := func(name, ns string) string {
		meta := "{name: " + name + "}"
		if ns != "" {
			meta = "{name: " + name + ", namespace: " + ns + "}"
		}
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: " + meta + "\ndata: {release: " + name + "}\n"
	}
	var platform strings.Builder
	for _, team := range []string{"team-a", "team-b"} {
		fmt.Fprintf(&platform, `---
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: %[1]s}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: ServiceAccount, name: deployer, namespace: %[1]s}]
`, team)
	}
	newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml":           fleetYAML,
		"platform/teams.yaml":        platform.String(),
		"teams/a-web/cm.yaml":        cm("a-web", ""),
		"teams/b-web/cm.yaml":        cm("b-web", ""),
		"teams/a-admin/cm.yaml":      cm("a-admin", ""),
		"teams/a-intrude/cm.yaml":    cm("a-intrude", "") + "---\n" + cm("intrude", "team-b"),
		"teams/b-system/cm.yaml":     cm("b-system", "") + "---\n" + cm("planted", "flotilla-system"),
		"teams/b-secret/cm.yaml":     cm("b-secret", "") + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {key: value}\n",
		"teams/a-admin/binding.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: team-a-admin}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: deployer, namespace: team-a}]\n",
	})
	newRepo(t, otherDir, map[string]string{"teams/a-foreign/cm.yaml": cm("a-foreign", "")})

	f := newFleet(t, repoURL, map[string]map[string]string{"edge": {"env": "prod"}})
	failed := map[string][]string{ // release -> what its error must say
		"a-admin":   {`clusterrolebinding.rbac.authorization.k8s.io/team-a-admin: kind rbac.authorization.k8s.io/ClusterRoleBinding is not allowed by project "team-a"`},
		"a-intrude": {`configmap/intrude in namespace "team-b": namespace team-b is not one of project "team-a"'s namespaces (team-a)`},
		"b-system":  {`configmap/planted in namespace "flotilla-system": namespace flotilla-system holds the agent's inventories; only the agent writes there`},
		"b-secret":  {`secret/token in namespace "team-b"`, `User "system:serviceaccount:team-b:deployer" cannot`, `resource "secrets"`},
	}
	const foreignProblem = `project team-a does not allow source "other"`
	st := f.waitStatus("team releases Ready, the others failed with their rule", 3*time.Minute, func(st hubclient.StatusView) bool {
		byRelease := map[string]hubclient.AssignmentView{}
		for _, a := range st.Assignments {
			byRelease[a.Release] = a
		}
		for _, r := range []string{"platform-base", "a-web", "b-web"} {
			if a, ok := byRelease[r]; !ok || a.Phase != "Ready" {
				return false
			}
		}
		for r, wants := range failed {
			a, ok := byRelease[r]
			if !ok || a.Phase != "Failed" {
				return false
			}
			for _, w := range wants {
				if !strings.Contains(a.Error, w) {
					return false
				}
			}
		}
		return strings.Contains(strings.Join(st.Problems, "\n"), foreignProblem)
	})
	for _, a := range st.Assignments {
		if a.Release == "a-foreign" {
			t.Errorf("a-foreign, whose source its project does not allow, is assigned to %s", a.Cluster)
		}
	}
	for r := range failed {
		for _, a := range st.Assignments {
			if a.Release == r && !strings.Contains(a.Error, "nothing applied") {
				t.Errorf("%s: error does not say nothing was applied: %s", r, a.Error)
			}
		}
	}

	edge := f.clusters["edge"]
	for _, c := range [][2]string{{"team-a", "a-web"}, {"team-b", "b-web"}} {
		if _, ok := configMapData(t, edge, c[0], c[1], "release"); !ok {
			t.Errorf("ConfigMap %s/%s of a release within its project is missing", c[0], c[1])
		}
	}
	for _, c := range [][2]string{
		{"team-a", "a-admin"}, {"team-a", "a-intrude"}, {"team-b", "intrude"}, {"team-b", "b-system"},
		{"flotilla-system", "planted"}, {"team-b", "b-secret"}, {"team-a", "a-foreign"},
	} {
		if _, ok := configMapData(t, edge, c[0], c[1], "release"); ok {
			t.Errorf("ConfigMap %s/%s of a refused release was applied", c[0], c[1])
		}
	}
	cs := kubernetes.NewForConfigOrDie(edge.RESTConfig())
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), "team-a-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding team-a-admin: err = %v, want not found", err)
	}
	if _, err := cs.CoreV1().Secrets("team-b").Get(t.Context(), "token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret team-b/token: err = %v, want not found", err)
	}
	// The team's inventory is the agent's, and says whose identity applied its objects.
	inv, err := cs.CoreV1().ConfigMaps("flotilla-system").Get(t.Context(), "inventory-a-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := inv.Annotations["flotilla.dev/service-account"]; got != "team-a/deployer" {
		t.Errorf("inventory of a-web: service account %q, want team-a/deployer", got)
	}
}
