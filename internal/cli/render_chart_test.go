package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flotilla/flotilla/internal/toolbin"
)

// chartTree is an artifact whose charts/shop directory is a chart with a helper, a vendored
// dependency, a CRD, hooks and a test hook, and a values file beside it using a variable.
func chartTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"charts/shop/Chart.yaml": `apiVersion: v2
name: shop
version: 1.4.0
appVersion: "3.1"
dependencies:
  - name: cache
    version: 1.0.0
    repository: https://charts.example.com
    condition: cache.enabled
`,
		"charts/shop/Chart.lock": `dependencies:
- name: cache
  repository: https://charts.example.com
  version: 1.0.0
digest: sha256:1234
generated: "2024-01-01T00:00:00Z"
`,
		"charts/shop/values.yaml": "replicas: 1\nhost: shop.local\ncache:\n  enabled: true\n  size: 1Gi\n",
		"charts/shop/templates/_helpers.tpl": `{{- define "shop.labels" -}}
app: {{ .Chart.Name }}
release: {{ .Release.Name }}
{{- end }}`,
		"charts/shop/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-shop
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      {{- include "shop.labels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "shop.labels" . | nindent 8 }}
    spec:
      containers:
        - name: shop
          image: "shop:{{ .Chart.AppVersion }}"
          env:
            - {name: HOST, value: {{ .Values.host | quote }}}
            - {name: KUBE, value: {{ .Capabilities.KubeVersion.Version | quote }}}
            - {name: METRICS, value: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}}
`,
		"charts/shop/templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "shop:{{ .Chart.AppVersion }}"}]
`,
		"charts/shop/templates/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers: [{name: t, image: busybox}]
`,
		"charts/shop/crds/orders.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: orders.shop.example.com
spec:
  group: shop.example.com
  names: {kind: Order, plural: orders}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
		"charts/shop/charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 1.0.0\n",
		"charts/shop/charts/cache/templates/sts.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-cache
spec:
  serviceName: cache
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: cache, image: redis:7}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: {{ .Values.size }}}}}
`,
		"values/edge.yaml":          "host: ${cluster_name}.shop.example.com\nreplicas: 2\n",
		"values/edge-rendered.yaml": "host: edge-1.shop.example.com\nreplicas: 2\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestRenderCommandChartEqualsHelmTemplate: `flotilla render` on a chart prints what `helm
// template NAME DIR --include-crds --skip-tests` prints for the same flags, object for object.
func TestRenderCommandChartEqualsHelmTemplate(t *testing.T) {
	t.Parallel()
	helm := referenceHelm(t)
	root := chartTree(t)
	flags := []string{"--namespace", "web", "--set", "cache.size=5Gi", "--set", "replicas=3",
		"--kube-version", "v1.30.1", "--api-versions", "monitoring.coreos.com/v1"}

	out, err := runRender(t, append([]string{root, "--path", "charts/shop", "--release-name", "shop",
		"--values", filepath.Join(root, "values", "edge.yaml"), "--var", "cluster_name=edge-1"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	got := objectsByKey(t, []byte(out))

	// helm does not substitute: it gets the values file as the agent would see it substituted.
	cmd := exec.Command(helm, append([]string{"template", "shop", filepath.Join(root, "charts", "shop"),
		"--include-crds", "--skip-tests", "-f", filepath.Join(root, "values", "edge-rendered.yaml")}, flags...)...)
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"), "HELM_CACHE_HOME=" + home,
		"HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	helmOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v: %s", cmd.Args, err, stderr.String())
	}
	want := objectsByKey(t, helmOut)

	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flotilla render differs from helm template (-helm +flotilla):\n%s", diff)
	}
	for _, k := range []string{"CustomResourceDefinition//orders.shop.example.com", "Deployment//shop-shop", "StatefulSet//shop-cache", "Job//shop-migrate"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not rendered", k)
		}
	}
	if _, ok := got["Pod//shop-test"]; ok {
		t.Error("the test hook was rendered")
	}
	// Order: the CRD first, the hook last.
	lines := strings.Split(out, "\n---\n")
	if !strings.Contains(lines[0], "kind: CustomResourceDefinition") || !strings.Contains(lines[len(lines)-1], "name: shop-migrate") {
		t.Errorf("want the CRD first and the hook last, got:\n%s", out)
	}

	// --include-crds=false leaves the CRD out.
	out, err = runRender(t, root, "--path", "charts/shop", "--include-crds=false")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "CustomResourceDefinition") {
		t.Errorf("--include-crds=false rendered the CRD:\n%s", out)
	}
	if !strings.Contains(out, "name: release-name-shop") {
		t.Errorf("default release name is not helm's release-name:\n%s", out)
	}
}

// TestRenderCommandChartErrors: chart flags on a directory that is no chart are usage errors;
// a chart that fails says which chart; a values file's undefined variable names it.
func TestRenderCommandChartErrors(t *testing.T) {
	t.Parallel()
	root := chartTree(t)
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"values on a plain directory", []string{root, "--path", "values", "--values", "x.yaml"}, true, "--values applies to a Helm chart"},
		{"set on a plain directory", []string{root, "--set", "a=b"}, true, "--set applies to a Helm chart"},
		{"missing values file", []string{root, "--path", "charts/shop", "--values", filepath.Join(root, "nope.yaml")}, false, "--values: open"},
		{"undefined variable", []string{root, "--path", "charts/shop", "--values", filepath.Join(root, "values", "edge.yaml")}, false, `undefined variable "cluster_name"`},
		{"bad set", []string{root, "--path", "charts/shop", "--set", "a[=1"}, false, `--set "a[=1"`},
		{"invalid kube version", []string{root, "--path", "charts/shop", "--kube-version", "x.y"}, false, `kube version "x.y"`},
		{"invalid release name", []string{root, "--path", "charts/shop", "--release-name", "UPPER"}, false, "chart shop 1.4.0:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := runRender(t, tc.args...)
			if err == nil {
				t.Fatal("render succeeded")
			}
			var ue usageError
			if tc.usage != errors.As(err, &ue) {
				t.Errorf("usage error = %v, want %v: %v", !tc.usage, tc.usage, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// objectsByKey parses a YAML stream as kubectl does and indexes it by kind/namespace/name.
func objectsByKey(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("parse: %v\n%s", err, data)
		}
		if m == nil {
			continue
		}
		md, _ := m["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		k := m["kind"].(string) + "/" + ns + "/" + name
		if _, dup := out[k]; dup {
			t.Fatalf("%s twice", k)
		}
		// Through JSON, so that both sides have the same number types.
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(j, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
}

// referenceHelm is bin/helm at the repository root, built by `make bin/helm`.
func referenceHelm(t *testing.T) string {
	t.Helper()
	return toolbin.Path(t, "helm")
}
