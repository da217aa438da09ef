package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/toolbin"
)

// helmBinary returns bin/helm at the repository root: the reference `helm` built from the
// Helm module pinned in tools/helm. A test that needs it fails, never skips, without it.
func helmBinary(t testing.TB) string {
	t.Helper()
	return toolbin.Path(t, "helm")
}

// helmTemplate runs `bin/helm template NAME DIR --include-crds --skip-tests ARGS...` in an
// environment of its own (no kubeconfig, no repositories, no plugins) and returns its output.
func helmTemplate(t testing.TB, helm, name, dir string, args ...string) ([]byte, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm, append([]string{"template", name, dir, "--include-crds", "--skip-tests"}, args...)...)
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=/usr/bin:/bin",
		"KUBECONFIG=" + filepath.Join(home, "no-kubeconfig"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// parseStream reads objects as kubectl apply -f does (YAML 1.1 to JSON), Lists expanded.
func parseStream(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("parse helm output: %v", err)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			if err := u.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		out = append(out, u)
	}
}

// dropRepeatedCRDs leaves out a CRD identical to one before it, as helm install does (it
// creates CRDs one by one, skipping those that exist) and render.Render does; helm template
// prints a subchart's crds/ once per alias the subchart is used under.
func dropRepeatedCRDs(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && slices.ContainsFunc(objs[:i], func(p *unstructured.Unstructured) bool {
			return p.GetKind() == o.GetKind() && cmp.Equal(p.Object, o.Object)
		}) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// keyed indexes objects by kind/namespace/name and fails on a duplicate.
func keyed(t testing.TB, what string, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		k := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if _, dup := out[k]; dup {
			t.Fatalf("%s: %s twice", what, k)
		}
		// Through JSON, so that both sides have the same number types.
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out[k] = m
	}
	return out
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

type chartCase struct {
	name    string
	chart   func(testing.TB, string) // writes the chart into the directory
	release string
	ns      string
	values  map[string]string // values files: name -> content, passed in name order
	inline  string            // Helm.Values (given to helm as one more -f file)
	set     []string
	kube    string
	apis    []string
	// want are objects (kind/namespace/name) the case exists to produce: the comparison
	// must not pass by both sides rendering nothing.
	want []string
	// absent are objects that must not be rendered (disabled dependencies, test hooks).
	absent []string
}

var chartCases = []chartCase{
	{
		name: "webapp defaults", chart: webappChart, release: "shop", ns: "web",
		want: []string{
			"CustomResourceDefinition//widgets.example.com", "CustomResourceDefinition//gadgets.example.com",
			"CustomResourceDefinition//redisbackups.example.com",
			"Deployment//shop-webapp", "Secret//shop-webapp-secret", "ConfigMap//shop-webapp-config",
			"StatefulSet//shop-redis-master", "Namespace//web-jobs",
			"Job//shop-webapp-migrate", "Job//shop-webapp-warm-cache", "ConfigMap//shop-webapp-migrate-config",
		},
		absent: []string{
			"Pod//shop-webapp-test-connection", "Pod//shop-webapp-test-legacy", "Pod//shop-webapp-test-failure",
			"DaemonSet//shop-metrics-exporter", "StatefulSet//shop-sessions-master", "Ingress//shop-webapp",
			"ServiceMonitor//shop-webapp", "StatefulSet//shop-redis-replicas",
		},
	},
	{
		name: "webapp production", chart: webappChart, release: "webapp", ns: "prod",
		values: map[string]string{
			"1-prod.yaml": `replicaCount: 4
image:
  tag: 2.0.1
ingress:
  enabled: true
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt
  hosts:
    - host: shop.example.com
      paths:
        - {path: /, pathType: Prefix}
        - {path: /api, pathType: ImplementationSpecific}
redis:
  architecture: replication
  master:
    persistence:
      size: 50Gi
sessions:
  enabled: true
global:
  environment: production
  imageRegistry: registry.example.com
`,
			"2-eu.yaml": `extraEnv:
  - name: REGION
    value: eu-west-1
config:
  greeting: hallo
`,
		},
		inline: `{"autoscaling": {"enabled": true, "maxReplicas": 20}, "podAnnotations": {"team": "shop"}}`,
		set:    []string{"tags.monitoring=true", "service.port=8080", "config.maxConnections=250", "fullnameOverride=shop"},
		kube:   "v1.31.4", apis: []string{"monitoring.coreos.com/v1", "example.com/v1/Widget"},
		want: []string{
			"Ingress//shop", "HorizontalPodAutoscaler//shop", "ServiceMonitor//shop", "DaemonSet//webapp-metrics-exporter",
			"StatefulSet//webapp-sessions-master", "StatefulSet//webapp-redis-master", "ConfigMap//webapp-metrics-post",
			"StatefulSet//webapp-redis-replicas", "StatefulSet//webapp-sessions-replicas",
		},
	},
	{
		name: "webapp on an old cluster", chart: webappChart, release: "old", ns: "legacy",
		values: map[string]string{"values.yaml": "ingress:\n  enabled: true\nredis:\n  enabled: false\n"},
		kube:   "1.17.9",
		want:   []string{"Ingress//old-webapp"}, absent: []string{"StatefulSet//old-redis-master"},
	},
	{
		name: "operator", chart: operatorChart, release: "widgets", ns: "operators",
		set:  []string{"mode=namespaced", "watchNamespaces={team-a,team-b}", "defaultWidget.size=5"},
		want: []string{"CustomResourceDefinition//widgets.example.com", "Widget//default", "RoleBinding/team-a/widgets-operator", "RoleBinding/team-b/widgets-operator", "ConfigMap//widgets-operator"},
	},
	{
		name: "legacy v1 chart", chart: legacyChart, release: "old-app", ns: "default",
		values: map[string]string{"values.yaml": "postgresql:\n  postgresqlDatabase: orders\n"},
		want:   []string{"ConfigMap//old-app-legacy", "StatefulSet//old-app-postgresql"},
	},
}

// TestRenderChartMatchesHelmTemplate renders real-world-shaped charts in-process and with the
// reference `helm template NAME DIR --include-crds --skip-tests` on the same inputs, and
// requires the same objects, field for field.
func TestRenderChartMatchesHelmTemplate(t *testing.T) {
	t.Parallel()
	helm := helmBinary(t)
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			chartDir := filepath.Join(root, "charts", "app")
			tc.chart(t, chartDir)
			h := &render.Helm{ReleaseName: tc.release, Namespace: tc.ns, Set: tc.set, IncludeCRDs: true,
				KubeVersion: tc.kube, APIVersions: tc.apis, Values: []byte(tc.inline)}
			args := []string{"--namespace", tc.ns}
			valuesDir := t.TempDir()
			for _, name := range sortedKeys(tc.values) {
				h.ValuesFiles = append(h.ValuesFiles, render.ValuesFile{Name: name, Data: []byte(tc.values[name])})
				p := filepath.Join(valuesDir, name)
				writeChartFiles(t, valuesDir, map[string]string{name: tc.values[name]})
				args = append(args, "-f", p)
			}
			if tc.inline != "" {
				writeChartFiles(t, valuesDir, map[string]string{"zz-inline.json": tc.inline})
				args = append(args, "-f", filepath.Join(valuesDir, "zz-inline.json"))
			}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			if tc.kube != "" {
				args = append(args, "--kube-version", tc.kube)
			}
			for _, a := range tc.apis {
				args = append(args, "--api-versions", a)
			}
			out, err := helmTemplate(t, helm, tc.release, chartDir, args...)
			if err != nil {
				t.Fatal(err)
			}
			want := keyed(t, "helm template", dropRepeatedCRDs(parseStream(t, out)))

			objs, err := render.Render(context.Background(), render.Options{Root: root, Path: "charts/app", Helm: h})
			if err != nil {
				t.Fatal(err)
			}
			got := keyed(t, "render.Render", objs)

			if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
				t.Fatalf("objects differ from helm template (-helm +render):\n%s", diff)
			}
			for _, k := range keys(want) {
				if diff := cmp.Diff(want[k], got[k]); diff != "" {
					t.Errorf("%s differs from helm template (-helm +render):\n%s", k, diff)
				}
			}
			for _, k := range tc.want {
				if _, ok := got[k]; !ok {
					t.Errorf("%s was not rendered; got %v", k, keys(got))
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s was rendered, want it left out", k)
				}
			}
		})
	}
}

// TestRenderChartSemantics checks what the comparison cannot show by itself: the values
// templates see (.Release, .Capabilities, lookup) and the order objects come out in.
func TestRenderChartSemantics(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	webappChart(t, root)
	objs, err := render.Render(context.Background(), render.Options{Root: root, Helm: &render.Helm{
		ReleaseName: "shop", Namespace: "web", IncludeCRDs: true, KubeVersion: "1.30.2",
		APIVersions: []string{"monitoring.coreos.com/v1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var config *unstructured.Unstructured
	for _, o := range objs {
		order = append(order, o.GetKind()+"/"+o.GetName())
		if o.GetName() == "shop-webapp-config" {
			config = o
		}
	}
	data, _, _ := unstructured.NestedStringMap(config.Object, "data")
	for k, want := range map[string]string{
		"release":             "shop/web install=true upgrade=false rev=1",
		"kube-version":        "v1.30.2",
		"kube-minor":          "30",
		"has-monitoring-api":  "true",
		"has-apps-deployment": "false", // helm template knows versions, not resources, unless given
		"banner":              "Welcome to shop in web",
	} {
		if data[k] != want {
			t.Errorf("ConfigMap shop-webapp-config data[%s] = %q, want %q", k, data[k], want)
		}
	}
	secret := findObject(objs, "Secret", "shop-webapp-secret")
	if v, _, _ := unstructured.NestedString(secret.Object, "data", "lookup-was-empty"); v != "dHJ1ZQ==" { // "true"
		t.Errorf("lookup returned something: lookup-was-empty = %q", v)
	}

	// CRDs first (the chart's, then its subcharts'), then Helm's install order, then hooks:
	// pre-* by weight, then post-*.
	want := []string{
		"CustomResourceDefinition/widgets.example.com", "CustomResourceDefinition/gadgets.example.com",
		"CustomResourceDefinition/redisbackups.example.com",
		"Namespace/web-jobs", "ServiceAccount/shop-webapp", "Secret/shop-webapp-secret", "ConfigMap/shop-webapp-config",
		"Role/shop-webapp", "RoleBinding/shop-webapp", "Service/shop-redis-headless", "Service/shop-webapp",
		"Deployment/shop-webapp", "StatefulSet/shop-redis-master",
		"ServiceMonitor/shop-webapp",
		"ConfigMap/shop-webapp-migrate-config", "Job/shop-webapp-migrate", "Job/shop-webapp-warm-cache",
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("render order (-want +got):\n%s", diff)
	}
	if got := findObject(objs, "Job", "shop-webapp-migrate").GetAnnotations()["helm.sh/hook"]; got != "pre-install,pre-upgrade" {
		t.Errorf("hook annotation = %q, want it kept for the reconciler", got)
	}

	// Without IncludeCRDs, no CRD.
	objs, err = render.Render(context.Background(), render.Options{Root: root, Helm: &render.Helm{ReleaseName: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("IncludeCRDs false rendered %s", o.GetName())
		}
	}
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	panic(fmt.Sprintf("no %s/%s", kind, name))
}

// TestRenderChartDeterministic renders the same inputs repeatedly and requires the same bytes
// in the same order: the agent re-renders on every reconcile, and a different order or value
// would look like a change. Helm's loader collects subcharts from a map, so a chart with
// several subcharts holding CRDs comes out of Helm in a varying order unless it is fixed.
func TestRenderChartDeterministic(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	webappChart(t, root)
	// Two more subcharts with CRDs, so that an unordered pass over subcharts shows.
	for _, n := range []string{"alpha", "zeta", "mid"} {
		writeChartFiles(t, root, map[string]string{
			"charts/" + n + "/Chart.yaml":       "apiVersion: v2\nname: " + n + "\nversion: 1.0.0\n",
			"charts/" + n + "/crds/crd.yaml":    crdYAML(n+"s", strings.ToUpper(n[:1])+n[1:]),
			"charts/" + n + "/templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\n",
		})
	}
	opts := render.Options{Root: root, Helm: &render.Helm{ReleaseName: "shop", IncludeCRDs: true,
		Set: []string{"tags.monitoring=true", "sessions.enabled=true"}}}
	var first []byte
	for i := range 8 {
		objs, err := render.Render(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(objs)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = data
			continue
		}
		if !bytes.Equal(first, data) {
			t.Fatalf("render %d differs from the first:\n%s", i+1, cmp.Diff(string(first), string(data)))
		}
	}
}
