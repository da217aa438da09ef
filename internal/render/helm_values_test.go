package render_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/render"
)

// echoChart renders its values back as a ConfigMap (toJson keeps their types) and a literal
// ${...} of its own, which must reach the output untouched: variables are substituted in values,
// never in what the chart renders.
var echoChart = map[string]string{
	"app/Chart.yaml":  "apiVersion: v2\nname: echo\nversion: 1.0.0\n",
	"app/values.yaml": "# chart defaults are never substituted: ${not_a_variable}\nreplicas: 1\nhost: default.local\nnested:\n  keep: chart\n  over: chart\n",
	"app/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: echo
data:
  values: {{ toJson .Values | quote }}
  shell: "echo ${HOME} $${x}"
`,
}

func renderEcho(t *testing.T, h render.Helm, vars map[string]string) map[string]any {
	t.Helper()
	root := t.TempDir()
	writeChartFiles(t, root, echoChart)
	objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "app", Helm: &h, Vars: vars})
	if err != nil {
		t.Fatal(err)
	}
	cm := findObject(objs, "ConfigMap", "echo")
	if shell, _, _ := unstructured.NestedString(cm.Object, "data", "shell"); shell != "echo ${HOME} $${x}" {
		t.Errorf("chart output was substituted: shell = %q", shell)
	}
	js, _, _ := unstructured.NestedString(cm.Object, "data", "values")
	var v map[string]any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRenderChartValues: values files in order, then Values, then --set, merged as Helm merges
// them, with the cluster's variables substituted in the text of values files and Values.
func TestRenderChartValues(t *testing.T) {
	t.Parallel()
	got := renderEcho(t, render.Helm{
		ValuesFiles: []render.ValuesFile{
			{Name: "values/common.yaml", Data: []byte(`# host: ${commented_out_is_not_substituted}
replicas: ${replicas}
host: ${cluster_name}.${cluster_label_region}.example.com
quoted: "${replicas}"
tier: ${tier:=bronze}
literal: $${not_substituted}
nested:
  over: common
`)},
			{Name: "values/prod.yaml", Data: []byte("nested:\n  over: prod\n  extra: [a, b]\nenabled: yes\n")},
		},
		// Values come as JSON (the Release's values map): every string stays a string.
		Values: []byte(`{"zone": "${cluster_label_region}-a", "count": "${replicas}"}`),
		Set:    []string{"nested.set=${replicas}", "list={x,y}"},
	}, map[string]string{"cluster_name": "edge-1", "cluster_label_region": "eu-west", "replicas": "3"})

	want := map[string]any{
		"replicas": float64(3), // a number: it was not quoted
		"host":     "edge-1.eu-west.example.com",
		"quoted":   "3",
		"tier":     "bronze",
		"literal":  "${not_substituted}",
		"nested":   map[string]any{"keep": "chart", "over": "prod", "extra": []any{"a", "b"}, "set": "${replicas}"},
		"enabled":  true, // YAML 1.1, as helm -f reads it
		"zone":     "eu-west-a",
		"count":    "3",
		"list":     []any{"x", "y"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestRenderChartPostRender: kustomize patches (strategic merge and JSON 6902, with and without
// a target) change the chart's CRDs and manifests, not its hooks, as a post-renderer given to
// helm sees them.
func TestRenderChartPostRender(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	webappChart(t, root)
	h := &render.Helm{ReleaseName: "shop", Namespace: "web", IncludeCRDs: true, PostRender: []render.Patch{
		{Name: "patches/labels.yaml", Patch: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-webapp
  labels:
    team: payments
spec:
  template:
    spec:
      nodeSelector:
        pool: web
`)},
		{Name: "inline patch 2", Patch: []byte(`- op: add
  path: /metadata/annotations
  value: {patched: "yes"}
`), Target: &render.PatchTarget{Kind: "Job"}},
		{Name: "inline patch 3", Patch: []byte(`- op: add
  path: /metadata/labels
  value: {stage: crds}
`), Target: &render.PatchTarget{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}},
	}}
	objs, err := render.Render(context.Background(), render.Options{Root: root, Helm: h})
	if err != nil {
		t.Fatal(err)
	}
	dep := findObject(objs, "Deployment", "shop-webapp")
	if dep.GetLabels()["team"] != "payments" || dep.GetLabels()["app.kubernetes.io/name"] != "webapp" {
		t.Errorf("Deployment labels = %v, want team=payments merged into the chart's", dep.GetLabels())
	}
	if sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "spec", "nodeSelector"); sel["pool"] != "web" {
		t.Errorf("nodeSelector = %v", sel)
	}
	if crd := findObject(objs, "CustomResourceDefinition", "widgets.example.com"); crd.GetLabels()["stage"] != "crds" {
		t.Errorf("CRD labels = %v, want the patch's", crd.GetLabels())
	}
	if crd := findObject(objs, "CustomResourceDefinition", "gadgets.example.com"); crd.GetLabels()["stage"] != "" {
		t.Errorf("CRD outside the target was patched: %v", crd.GetLabels())
	}
	// The hook Jobs are Helm hooks: post-renderers do not see them.
	for _, name := range []string{"shop-webapp-migrate", "shop-webapp-warm-cache"} {
		if a := findObject(objs, "Job", name).GetAnnotations(); a["patched"] != "" || a["helm.sh/hook"] == "" {
			t.Errorf("hook Job %s annotations = %v, want the chart's, unpatched", name, a)
		}
	}
	// Types survive the round trip through kustomize: an int stays an int, a string a string.
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %v", dep.Object["spec"].(map[string]any)["replicas"])
	}
	cm := findObject(objs, "ConfigMap", "shop-webapp-config")
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "enabled"); v != "true" {
		t.Errorf("ConfigMap data.enabled = %#v, want the string \"true\"", cm.Object["data"].(map[string]any)["enabled"])
	}
	// The order is Helm's, with hooks last.
	if last := objs[len(objs)-1]; last.GetName() != "shop-webapp-warm-cache" {
		t.Errorf("last object is %s/%s, want the post-install hook", last.GetKind(), last.GetName())
	}
}
