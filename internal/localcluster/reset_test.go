package localcluster_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// What a test leaves behind: a namespace held by a finalizer, a custom resource and its
// definition, an object with a finalizer of its own, a cluster role.
const leftovers = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: team, finalizers: [example.com/keep]}
data: {k: v}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: team-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`

func TestResetReturnsToTheBaseline(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "reset"})
	if err := c.MarkBaseline(t.Context()); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	leave := func() {
		t.Helper()
		kubectl(t, c, widgetCRD, "apply", "-f", "-")
		kubectl(t, c, "", "wait", "--for=condition=Established", "crd/widgets.example.com")
		kubectl(t, c, leftovers, "apply", "-f", "-")
		// Without a controller manager the namespace stays Terminating: an API delete
		// could never finish.
		if err := cs.CoreV1().Namespaces().Delete(t.Context(), "team", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	leave()
	if err := c.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "team", metav1.GetOptions{}); err == nil {
		t.Error("namespace team still there after Reset")
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(t.Context(), "team-reader", metav1.GetOptions{}); err == nil {
		t.Error("cluster role team-reader still there after Reset")
	}
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "example.com" {
			t.Error("API group example.com still served after Reset")
		}
	}
	// The next test may use the same names.
	leave()
	if err := c.Reset(t.Context()); err != nil {
		t.Fatalf("second reset: %v", err)
	}

	// A change to what the cluster started with cannot be undone by deleting.
	kubectl(t, c, "", "label", "namespace", "default", "touched=yes")
	err = c.Reset(t.Context())
	if !errors.Is(err, localcluster.ErrChanged) || !strings.Contains(err.Error(), "/registry/namespaces/default") {
		t.Errorf("Reset after a change to namespace default = %v, want ErrChanged naming /registry/namespaces/default", err)
	}
}

func kubectl(t *testing.T, c *localcluster.Cluster, stdin string, args ...string) {
	t.Helper()
	if _, err := c.Kubectl(t.Context(), strings.NewReader(stdin), args...); err != nil {
		t.Fatal(err)
	}
}
