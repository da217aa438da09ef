// Package deploy holds the manifests that run the hub and the agent in real clusters; its
// test validates them with a server-side dry-run against a real API server.
package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/agent/reconcile"
	"github.com/flotilla/flotilla/internal/agent/render"
	"github.com/flotilla/flotilla/internal/localcluster"
	"github.com/flotilla/flotilla/internal/localcluster/clustertest"
)

func TestManifestsPassServerSideDryRun(t *testing.T) {
	c := clustertest.Start(t, localcluster.Options{Name: "deploy"})
	r, err := reconcile.New(c.RESTConfig(), reconcile.Config{}, nil)
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
				"agent":  {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret", "PersistentVolumeClaim", "Deployment"},
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
