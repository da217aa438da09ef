package render_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/render"
)

// benchChart writes a chart of 100 templates in the shape of a large umbrella chart: each
// template is a Deployment, Service or ConfigMap built from named templates in _helpers.tpl
// (include, toYaml, nindent, tpl, range over values), 100 objects in all.
func benchChart(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: platform\nversion: 1.0.0\nappVersion: \"1.0\"\n",
		"values.yaml": `image:
  registry: registry.example.com
  tag: "1.0"
resources:
  requests: {cpu: 10m, memory: 32Mi}
  limits: {cpu: 100m, memory: 64Mi}
env:
  - {name: LOG_LEVEL, value: info}
  - {name: REGION, value: eu-west}
  - {name: FEATURES, value: "a,b,c"}
banner: "{{ .Release.Name }} in {{ .Release.Namespace }}"
`,
		"templates/_helpers.tpl": `{{- define "platform.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}
{{- define "platform.image" -}}
{{ .root.Values.image.registry }}/{{ .name }}:{{ .root.Values.image.tag }}
{{- end }}
`,
	}
	for i := range 100 {
		name := fmt.Sprintf("svc-%03d", i)
		var tpl string
		switch i % 3 {
		case 0:
			tpl = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "platform.labels" (dict "name" "NAME" "root" .) | nindent 4 }}
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: NAME
  template:
    metadata:
      labels:
        {{- include "platform.labels" (dict "name" "NAME" "root" .) | nindent 8 }}
    spec:
      containers:
        - name: NAME
          image: {{ include "platform.image" (dict "name" "NAME" "root" .) | quote }}
          env:
            {{- range .Values.env }}
            - name: {{ .name }}
              value: {{ .value | quote }}
            {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`
		case 1:
			tpl = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "platform.labels" (dict "name" "NAME" "root" .) | nindent 4 }}
spec:
  selector:
    app.kubernetes.io/name: NAME
  ports:
    - name: http
      port: 80
      targetPort: 8080
`
		default:
			tpl = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-NAME
  labels:
    {{- include "platform.labels" (dict "name" "NAME" "root" .) | nindent 4 }}
data:
  banner: {{ tpl .Values.banner . | quote }}
  {{- range $i, $e := .Values.env }}
  {{ $e.name }}: {{ $e.value | quote }}
  {{- end }}
`
		}
		files[fmt.Sprintf("templates/%s.yaml", name)] = string(bytes.ReplaceAll([]byte(tpl), []byte("NAME"), []byte(name)))
	}
	writeChartFiles(b, dir, files)
	return dir
}

const benchChartObjects = 100

// BenchmarkRenderChart renders the 100-template chart in-process, as the agent does on every
// reconcile; BenchmarkHelmTemplate runs `helm template` (bin/helm) on the same chart, the
// baseline measured in the same run, its process start included (what a user running helm
// template or a tool shelling out to it pays). Both report ns/object (wall clock) and
// cpu-ns/object (user and system CPU of the process, or of helm's): on a loaded machine the
// second is the steadier figure.
//
//	go test -run '^$' -bench 'RenderChart|HelmTemplate' ./internal/render
func BenchmarkRenderChart(b *testing.B) {
	dir := benchChart(b)
	opts := render.Options{Root: dir, Helm: &render.Helm{ReleaseName: "bench", Namespace: "platform", IncludeCRDs: true}}
	b.ReportAllocs()
	cpu := selfCPU(b)
	for b.Loop() {
		objs, err := render.Render(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != benchChartObjects {
			b.Fatalf("rendered %d objects, want %d", len(objs), benchChartObjects)
		}
	}
	reportPerObject(b, selfCPU(b)-cpu)
}

func BenchmarkHelmTemplate(b *testing.B) {
	helm := helmBinary(b)
	dir := benchChart(b)
	home := b.TempDir()
	var cpu time.Duration
	for b.Loop() {
		cmd := exec.Command(helm, "template", "bench", dir, "--namespace", "platform", "--include-crds", "--skip-tests")
		cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none"),
			"HELM_CACHE_HOME=" + home, "HELM_CONFIG_HOME=" + home, "HELM_DATA_HOME=" + home}
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if n := bytes.Count(out, []byte("\nkind: ")); n != benchChartObjects {
			b.Fatalf("helm template printed %d objects, want %d", n, benchChartObjects)
		}
	}
	reportPerObject(b, cpu)
}

func reportPerObject(b *testing.B, cpu time.Duration) {
	n := float64(b.N * benchChartObjects)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/object")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/object")
}

// selfCPU is the user and system CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
