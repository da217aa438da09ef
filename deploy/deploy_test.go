// Package deploy holds the manifests that run the hub and the agent in real clusters; its
// test validates them with a server-side dry-run against a real API server.
package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
	"github.com/flotilla/flotilla/internal/project"
	"github.com/flotilla/flotilla/internal/render"
)

func TestManifestsPassServerSideDryRun(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "deploy"})
	// The manifests live in flotilla-system, where no release may write: the test keeps its
	// own inventories elsewhere.
	r, err := reconcile.New(c.RESTConfig(), reconcile.Config{InventoryNamespace: "deploy-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"hub", "hub-ha", "agent"} {
		t.Run(dir, func(t *testing.T) {
			objs, err := render.Render(context.Background(), render.Options{Root: ".", Path: dir})
			if err != nil {
				t.Fatalf("kustomize build deploy/%s: %v", dir, err)
			}
			kinds := map[string]bool{}
			var namespaces []*unstructured.Unstructured
			for _, o := range objs {
				kinds[o.GetKind()] = true
				if o.GetKind() == "Namespace" {
					namespaces = append(namespaces, o)
				}
			}
			want := map[string][]string{
				"hub":    {"Namespace", "PersistentVolumeClaim", "Deployment", "Service"},
				"hub-ha": {"Namespace", "Secret", "StatefulSet", "Service", "PodDisruptionBudget"},
				"agent":  {"Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Secret", "PersistentVolumeClaim", "Deployment"},
			}[dir]
			for _, k := range want {
				if !kinds[k] {
					t.Errorf("deploy/%s has no %s", dir, k)
				}
			}
			if dir == "hub-ha" {
				wantReplicatedHub(t, objs)
			}
			// The namespace must exist for the API server to validate what goes in it. Both
			// kustomizations declare flotilla-system, so they share one assignment name.
			if _, err := r.Reconcile(t.Context(), namespaces, reconcile.Options{Name: "deploy"}); err != nil {
				t.Fatal(err)
			}
			res, err := r.Reconcile(t.Context(), objs, reconcile.Options{Name: "deploy", DryRun: true})
			if err != nil {
				t.Fatalf("server-side dry-run of deploy/%s: %v", dir, err)
			}
			if res.Requests.Writes != 0 {
				t.Errorf("dry run wrote %d times", res.Requests.Writes)
			}
			if n := res.Requests.DryRuns; int(n) < len(objs)-len(namespaces) {
				t.Errorf("%d dry-run requests for %d objects: not every object was validated", n, len(objs))
			}
			for _, o := range res.Objects {
				if strings.Contains(string(o.Action), "conflict") {
					t.Errorf("%s: %s", o.ObjectRef, o.Action)
				}
			}
		})
	}
}

// wantReplicatedHub checks what makes deploy/hub-ha replicated: two or more hub replicas,
// each on the shared store and with a replica ID of its own.
func wantReplicatedHub(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "StatefulSet" || o.GetName() != "flotilla-hub" {
			continue
		}
		if n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); n < 2 {
			t.Errorf("deploy/hub-ha runs %d hub replicas, want 2 or more", n)
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("deploy/hub-ha hub has %d containers, want 1", len(containers))
		}
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		for _, want := range []string{"--store=$(FLOTILLA_STORE)", "--replica-id=$(POD_NAME)"} {
			if !slices.Contains(args, want) {
				t.Errorf("deploy/hub-ha hub args %q lack %s", args, want)
			}
		}
		return
	}
	t.Error("deploy/hub-ha has no StatefulSet flotilla-hub")
}

// TestAgentLeastPrivilege installs deploy/agent for real and runs a reconciler with the
// agent's own ServiceAccount token, as the agent runs in a cluster: a project's release is
// applied as its ServiceAccount and recorded in an inventory, a platform release is denied
// until platform-admin.yaml is applied, and the agent's rules hold no wildcard.
func TestAgentLeastPrivilege(t *testing.T) {
	t.Parallel()
	c := clustertest.Start(t, localcluster.Options{Name: "deploy-rbac"})
	ctx := t.Context()
	admin, err := reconcile.New(c.RESTConfig(), reconcile.Config{InventoryNamespace: "deploy-test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(ctx, render.Options{Root: ".", Path: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, rule := range rules {
			for _, field := range []string{"apiGroups", "resources", "verbs", "nonResourceURLs"} {
				values, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), field)
				if slices.Contains(values, "*") {
					t.Errorf("%s %s grants %s \"*\"", o.GetKind(), o.GetName(), field)
				}
			}
		}
	}
	if _, err := admin.Reconcile(ctx, objs, reconcile.Options{Name: "agent"}); err != nil {
		t.Fatalf("install deploy/agent: %v", err)
	}

	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	// A team namespace whose ServiceAccount may manage ConfigMaps there, and nothing else.
	const team = "team-a"
	teamObjs := clustertest.Objects(t, `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: team-a}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: ServiceAccount, name: deployer, namespace: team-a}]
`)
	if _, err := admin.Reconcile(ctx, teamObjs, reconcile.Options{Name: "team-setup"}); err != nil {
		t.Fatal(err)
	}

	tok, err := cs.CoreV1().ServiceAccounts("flotilla-system").CreateToken(ctx, "flotilla-agent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the agent's ServiceAccount: %v", err)
	}
	agentCfg := c.RESTConfig()
	agentCfg.BearerToken = tok.Status.Token
	agent, err := reconcile.New(agentCfg, reconcile.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings := func(ns string) []*unstructured.Unstructured {
		return clustertest.Objects(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "+ns+"}\ndata: {a: b}\n")
	}

	t.Run("a project's release is applied as its ServiceAccount, its inventory by the agent", func(t *testing.T) {
		rules := &project.Rules{Name: team, Namespaces: []string{team},
			ServiceAccount: &v1alpha1.ServiceAccountRef{Namespace: team, Name: "deployer"}}
		if _, err := agent.Reconcile(ctx, settings(team), reconcile.Options{Name: "team-a-web", Namespace: team, Project: rules}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("flotilla-system").Get(ctx, "inventory-team-a-web", metav1.GetOptions{}); err != nil {
			t.Errorf("inventory: %v", err)
		}
	})

	t.Run("a platform release needs platform-admin.yaml", func(t *testing.T) {
		_, err := agent.Reconcile(ctx, settings("default"), reconcile.Options{Name: "platform-web", Namespace: "default"})
		if want := `User "system:serviceaccount:flotilla-system:flotilla-agent" cannot`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want the agent denied (%q)", err, want)
		}
		data, err := os.ReadFile("agent/platform-admin.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Reconcile(ctx, clustertest.Objects(t, string(data)), reconcile.Options{Name: "platform-admin"}); err != nil {
			t.Fatal(err)
		}
		// RBAC changes reach the authorizer's cache within a moment.
		eventually.Within(t, 30*time.Second, func() error {
			if _, err := agent.Reconcile(ctx, settings("default"), reconcile.Options{Name: "platform-web", Namespace: "default"}); err != nil {
				return fmt.Errorf("platform release with platform-admin.yaml applied: %w", err)
			}
			return nil
		})
	})
}
