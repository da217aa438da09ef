package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The charts below are written for the tests in the shape of public charts (helm create's
// scaffold, Bitnami's common library and subcharts, an operator with CRDs): named templates in
// _helpers.tpl with include/tpl/toYaml/nindent, dependencies vendored in charts/ (a directory,
// an archive and a library chart) with conditions, tags, aliases and a Chart.lock, hooks of each
// phase, crds/ in the chart and a subchart, .Capabilities checks, lookup, required and fail,
// range over values, and global values.

// writeChartFiles writes files (slash-separated path -> content) under dir.
func writeChartFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// chartArchive packs files as `helm package` does: a gzipped tar whose entries are under top/.
func chartArchive(t testing.TB, top string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range sortedKeys(files) {
		content := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// webappChart is an application chart in the shape of helm create's scaffold grown up: a
// redis subchart (directory, with its own values, helpers, CRD and use of global values), a
// metrics subchart as an archive enabled by a tag, and a library chart of shared helpers.
func webappChart(t testing.TB, dir string) {
	t.Helper()
	writeChartFiles(t, dir, map[string]string{
		"Chart.yaml": `apiVersion: v2
name: webapp
description: A web application with a cache
type: application
version: 1.2.3
appVersion: "2.0.0"
kubeVersion: ">=1.16.0-0"
dependencies:
  - name: redis
    version: 17.3.1
    repository: https://charts.example.com/stable
    condition: redis.enabled
  - name: metrics
    version: 0.3.1
    repository: oci://registry.example.com/charts
    tags: [monitoring]
  - name: common
    version: 2.1.0
    repository: https://charts.example.com/stable
  - name: redis
    alias: sessions
    version: 17.3.1
    repository: https://charts.example.com/stable
    condition: sessions.enabled
`,
		"Chart.lock": `dependencies:
- name: redis
  repository: https://charts.example.com/stable
  version: 17.3.1
- name: metrics
  repository: oci://registry.example.com/charts
  version: 0.3.1
- name: common
  repository: https://charts.example.com/stable
  version: 2.1.0
digest: sha256:0a3c4c4b5e7b1f0e2d9f1c2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d
generated: "2024-05-01T10:00:00Z"
`,
		".helmignore": `# Patterns to ignore when building packages.
.DS_Store
.git/
*.swp
*.bak
*.tmp
ci/
`,
		"ci/values-ci.yaml": "this: [is ignored\n",
		"templates/old.bak": "not: {valid",
		"templates/NOTES.txt": `Visit http://{{ include "webapp.fullname" . }}.{{ .Release.Namespace }}.svc:{{ .Values.service.port }}
`,
		"values.yaml": `# Default values for webapp.
replicaCount: 2
image:
  repository: ghcr.io/example/webapp
  tag: ""
  pullPolicy: IfNotPresent
imagePullSecrets: []
nameOverride: ""
fullnameOverride: ""
serviceAccount:
  create: true
  annotations: {}
  name: ""
podAnnotations:
  prometheus.io/scrape: "true"
service:
  type: ClusterIP
  port: 80
ingress:
  enabled: false
  className: nginx
  annotations: {}
  hosts:
    - host: webapp.example.com
      paths:
        - path: /
          pathType: Prefix
  tls: []
resources:
  limits:
    cpu: 500m
    memory: 256Mi
  requests:
    cpu: 100m
    memory: 128Mi
autoscaling:
  enabled: false
  minReplicas: 2
  maxReplicas: 10
  targetCPUUtilizationPercentage: 80
extraEnv:
  - name: LOG_LEVEL
    value: info
  - name: FEATURE_X
    value: "on"
config:
  greeting: hello
  banner: "Welcome to {{ .Release.Name }} in {{ .Release.Namespace }}"
  maxConnections: 100
  enabled: true
secretKey: ""
redis:
  enabled: true
  architecture: standalone
sessions:
  enabled: false
tags:
  monitoring: false
global:
  environment: dev
  imageRegistry: ""
`,
		"templates/_helpers.tpl": `{{/*
Expand the name of the chart.
*/}}
{{- define "webapp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Create a default fully qualified app name.
*/}}
{{- define "webapp.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "webapp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "webapp.labels" -}}
helm.sh/chart: {{ include "webapp.chart" . }}
{{ include "webapp.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{ include "common.labels.environment" . }}
{{- end }}

{{- define "webapp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webapp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "webapp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "webapp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "webapp.image" -}}
{{- $registry := .Values.global.imageRegistry -}}
{{- $repo := required "image.repository is required" .Values.image.repository -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if $registry }}{{ printf "%s/%s:%s" $registry $repo $tag }}{{ else }}{{ printf "%s:%s" $repo $tag }}{{ end }}
{{- end }}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "webapp.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "webapp.selectorLabels" . | nindent 8 }}
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      serviceAccountName: {{ include "webapp.serviceAccountName" . }}
      containers:
        - name: {{ .Chart.Name }}
          image: {{ include "webapp.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          env:
            - name: ENVIRONMENT
              value: {{ .Values.global.environment | quote }}
            {{- range .Values.extraEnv }}
            - name: {{ .name }}
              value: {{ .value | quote }}
            {{- end }}
            {{- if .Values.redis.enabled }}
            - name: REDIS_HOST
              value: {{ printf "%s-redis-master" .Release.Name | quote }}
            {{- end }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`,
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "webapp.selectorLabels" . | nindent 4 }}
`,
		"templates/serviceaccount.yaml": `{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "webapp.serviceAccountName" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "webapp.fullname" . }}-config
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
data:
  banner: {{ tpl .Values.config.banner . | quote }}
  {{- range $key, $value := .Values.config }}
  {{- if ne $key "banner" }}
  {{ $key }}: {{ $value | quote }}
  {{- end }}
  {{- end }}
  kube-version: {{ .Capabilities.KubeVersion.Version | quote }}
  kube-minor: {{ .Capabilities.KubeVersion.Minor | quote }}
  release: {{ printf "%s/%s install=%t upgrade=%t rev=%d" .Release.Name .Release.Namespace .Release.IsInstall .Release.IsUpgrade .Release.Revision | quote }}
  has-monitoring-api: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}
  has-apps-deployment: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  settings.yaml: |
    {{- toYaml .Values.resources | nindent 4 }}
`,
		"templates/secret.yaml": `{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-secret" (include "webapp.fullname" .)) }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "webapp.fullname" . }}-secret
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
type: Opaque
data:
  {{- if $existing }}
  key: {{ index $existing.data "key" }}
  {{- else }}
  key: {{ .Values.secretKey | default (printf "%s-%s" .Release.Name .Chart.Version | sha256sum | trunc 32) | b64enc | quote }}
  {{- end }}
  lookup-was-empty: {{ empty $existing | toString | b64enc | quote }}
`,
		"templates/ingress.yaml": `{{- if .Values.ingress.enabled -}}
{{- $fullName := include "webapp.fullname" . -}}
{{- $svcPort := .Values.service.port -}}
{{- if semverCompare ">=1.19-0" .Capabilities.KubeVersion.GitVersion }}
apiVersion: networking.k8s.io/v1
{{- else }}
apiVersion: networking.k8s.io/v1beta1
{{- end }}
kind: Ingress
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  {{- with .Values.ingress.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- if semverCompare ">=1.18-0" .Capabilities.KubeVersion.GitVersion }}
  ingressClassName: {{ .Values.ingress.className }}
  {{- end }}
  rules:
    {{- range .Values.ingress.hosts }}
    - host: {{ .host | quote }}
      http:
        paths:
          {{- range .paths }}
          - path: {{ .path }}
            {{- if semverCompare ">=1.19-0" $.Capabilities.KubeVersion.GitVersion }}
            pathType: {{ .pathType }}
            backend:
              service:
                name: {{ $fullName }}
                port:
                  number: {{ $svcPort }}
            {{- else }}
            backend:
              serviceName: {{ $fullName }}
              servicePort: {{ $svcPort }}
            {{- end }}
          {{- end }}
    {{- end }}
{{- end }}
`,
		"templates/hpa.yaml": `{{- if .Values.autoscaling.enabled }}
{{- if .Capabilities.APIVersions.Has "autoscaling/v2" }}
apiVersion: autoscaling/v2
{{- else }}
apiVersion: autoscaling/v2beta2
{{- end }}
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "webapp.fullname" . }}
  minReplicas: {{ .Values.autoscaling.minReplicas }}
  maxReplicas: {{ .Values.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .Values.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}
`,
		"templates/servicemonitor.yaml": `{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "webapp.fullname" . }}
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
spec:
  endpoints:
    - port: http
      interval: 30s
  selector:
    matchLabels:
      {{- include "webapp.selectorLabels" . | nindent 6 }}
{{- end }}
`,
		"templates/rbac.yaml": `{{- if .Values.serviceAccount.create }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "webapp.fullname" . }}
rules:
  - apiGroups: [""]
    resources: ["configmaps", "secrets"]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "webapp.fullname" . }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "webapp.fullname" . }}
subjects:
  - kind: ServiceAccount
    name: {{ include "webapp.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end }}
---
apiVersion: v1
kind: Namespace
metadata:
  name: {{ .Release.Namespace }}-jobs
`,
		"templates/hooks/db-migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "webapp.fullname" . }}-migrate
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    "helm.sh/hook-weight": "-5"
    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: {{ include "webapp.image" . | quote }}
          args: ["migrate", "--to", {{ .Chart.AppVersion | quote }}]
`,
		"templates/hooks/pre-config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "webapp.fullname" . }}-migrate-config
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "-10"
data:
  target: {{ .Chart.AppVersion | quote }}
`,
		"templates/hooks/post-upgrade.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "webapp.fullname" . }}-warm-cache
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: "10"
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: warm
          image: curlimages/curl:8.5.0
          args: ["http://{{ include "webapp.fullname" . }}:{{ .Values.service.port }}/warm"]
`,
		"templates/tests/test-connection.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: "{{ include "webapp.fullname" . }}-test-connection"
  labels:
    {{- include "webapp.labels" . | nindent 4 }}
  annotations:
    "helm.sh/hook": test
spec:
  containers:
    - name: wget
      image: busybox
      command: ['wget']
      args: ['{{ include "webapp.fullname" . }}:{{ .Values.service.port }}']
  restartPolicy: Never
`,
		"templates/tests/test-legacy.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: "{{ include "webapp.fullname" . }}-test-legacy"
  annotations:
    "helm.sh/hook": test-success
spec:
  containers:
    - name: true
      image: busybox
  restartPolicy: Never
`,
		"templates/tests/test-failure.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: "{{ include "webapp.fullname" . }}-test-failure"
  annotations:
    "helm.sh/hook": test-failure
spec:
  containers:
    - name: false
      image: busybox
  restartPolicy: Never
`,
		"crds/widgets.yaml": crdYAML("widgets", "Widget") + "---\n" + crdYAML("gadgets", "Gadget"),

		// redis: a dependency vendored as a directory, with its own values, helpers, CRD and
		// use of global values; also used a second time under the alias sessions.
		"charts/redis/Chart.yaml": `apiVersion: v2
name: redis
version: 17.3.1
appVersion: 7.0.5
`,
		"charts/redis/values.yaml": `architecture: replication
auth:
  enabled: true
  password: ""
master:
  persistence:
    size: 8Gi
replica:
  replicaCount: 3
global:
  environment: unset
`,
		"charts/redis/templates/_helpers.tpl": `{{- define "redis.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
`,
		"charts/redis/templates/master.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "redis.fullname" . }}-master
  labels:
    app.kubernetes.io/name: redis
    environment: {{ .Values.global.environment }}
spec:
  replicas: 1
  serviceName: {{ include "redis.fullname" . }}-headless
  selector:
    matchLabels:
      app.kubernetes.io/name: redis
  template:
    metadata:
      labels:
        app.kubernetes.io/name: redis
    spec:
      containers:
        - name: redis
          image: docker.io/bitnami/redis:{{ .Chart.AppVersion }}
          env:
            - name: ALLOW_EMPTY_PASSWORD
              value: {{ ternary "no" "yes" .Values.auth.enabled | quote }}
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: {{ .Values.master.persistence.size }}
`,
		"charts/redis/templates/replicas.yaml": `{{- if eq .Values.architecture "replication" }}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "redis.fullname" . }}-replicas
spec:
  replicas: {{ .Values.replica.replicaCount }}
  serviceName: {{ include "redis.fullname" . }}-headless
  selector:
    matchLabels:
      app.kubernetes.io/name: redis-replica
  template:
    metadata:
      labels:
        app.kubernetes.io/name: redis-replica
    spec:
      containers:
        - name: redis
          image: docker.io/bitnami/redis:{{ .Chart.AppVersion }}
{{- end }}
`,
		"charts/redis/templates/svc.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "redis.fullname" . }}-headless
spec:
  clusterIP: None
  ports:
    - name: tcp-redis
      port: 6379
  selector:
    app.kubernetes.io/name: redis
`,
		"charts/redis/crds/redisbackups.yaml": crdYAML("redisbackups", "RedisBackup"),

		// common: a library chart of shared helpers (never rendered on its own).
		"charts/common/Chart.yaml": `apiVersion: v2
name: common
type: library
version: 2.1.0
`,
		"charts/common/templates/_labels.tpl": `{{- define "common.labels.environment" -}}
app.kubernetes.io/environment: {{ .Values.global.environment | quote }}
{{- end -}}
`,
	})
	if err := os.WriteFile(filepath.Join(dir, "charts", "metrics-0.3.1.tgz"), chartArchive(t, "metrics", map[string]string{
		"Chart.yaml": `apiVersion: v2
name: metrics
version: 0.3.1
`,
		"values.yaml": `scrapeInterval: 30s
`,
		"templates/exporter.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-metrics-exporter
spec:
  selector:
    matchLabels:
      app: exporter
  template:
    metadata:
      labels:
        app: exporter
      annotations:
        scrape-interval: {{ .Values.scrapeInterval | quote }}
        environment: {{ .Values.global.environment | quote }}
    spec:
      containers:
        - name: exporter
          image: quay.io/prometheus/node-exporter:v1.7.0
`,
		"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-metrics-post
  annotations:
    helm.sh/hook: post-install
data:
  ok: "true"
`,
	}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func crdYAML(plural, kind string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.example.com
spec:
  group: example.com
  names:
    kind: ` + kind + `
    listKind: ` + kind + `List
    plural: ` + plural + `
    singular: ` + strings.ToLower(kind) + `
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
}

// operatorChart is an operator in the shape of cert-manager's and prometheus-operator's
// charts: CRDs, a custom resource of its own kind, files read with .Files, a schema for its
// values, and fail on a bad setting.
func operatorChart(t testing.TB, dir string) {
	t.Helper()
	writeChartFiles(t, dir, map[string]string{
		"Chart.yaml": `apiVersion: v2
name: widget-operator
version: 0.9.0-rc.1
appVersion: v0.9.0
`,
		"values.yaml": `mode: cluster
watchNamespaces: []
defaultWidget:
  create: true
  size: 3
logLevel: info
`,
		"values.schema.json": `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "mode": {"type": "string", "enum": ["cluster", "namespaced"]},
    "logLevel": {"type": "string"}
  }
}
`,
		"files/operator.conf":     "log-format = json\nmetrics = :8080\n",
		"files/extra/limits.conf": "max-widgets = 1000\n",
		"crds/widget.yaml":        crdYAML("widgets", "Widget"),
		"templates/_helpers.tpl":  `{{- define "op.name" -}}{{ .Release.Name }}-operator{{- end -}}`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "op.name" . }}
data:
  operator.conf: |-
{{ .Files.Get "files/operator.conf" | indent 4 }}
{{ (.Files.Glob "files/extra/*").AsConfig | indent 2 }}
`,
		"templates/operator.yaml": `{{- if and (eq .Values.mode "namespaced") (empty .Values.watchNamespaces) }}
{{- fail "mode namespaced needs watchNamespaces" }}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "op.name" . }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: widget-operator}
  template:
    metadata:
      labels: {app: widget-operator}
    spec:
      containers:
        - name: operator
          image: "ghcr.io/example/widget-operator:{{ .Chart.AppVersion }}"
          args:
            - --log-level={{ .Values.logLevel }}
            {{- if eq .Values.mode "namespaced" }}
            - --namespaces={{ join "," .Values.watchNamespaces }}
            {{- end }}
{{- range .Values.watchNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "op.name" $ }}
  namespace: {{ . }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: widget-operator
subjects:
  - kind: ServiceAccount
    name: {{ include "op.name" $ }}
    namespace: {{ $.Release.Namespace }}
{{- end }}
`,
		"templates/widget.yaml": `{{- if .Values.defaultWidget.create }}
apiVersion: example.com/v1
kind: Widget
metadata:
  name: default
spec:
  size: {{ .Values.defaultWidget.size }}
  enabled: yes
  ratio: 1.5
  labels: {{ toJson .Values.defaultWidget }}
{{- end }}
`,
	})
}

// legacyChart is an apiVersion v1 chart (Helm 2 era) whose dependency is named in
// requirements.yaml and locked in requirements.lock.
func legacyChart(t testing.TB, dir string) {
	t.Helper()
	writeChartFiles(t, dir, map[string]string{
		"Chart.yaml": `apiVersion: v1
name: legacy
version: 3.4.5
appVersion: "1.0"
`,
		"requirements.yaml": `dependencies:
  - name: postgresql
    version: 8.6.4
    repository: https://charts.helm.sh/stable
    condition: postgresql.enabled
`,
		"requirements.lock": `dependencies:
- name: postgresql
  repository: https://charts.helm.sh/stable
  version: 8.6.4
digest: sha256:1111111111111111111111111111111111111111111111111111111111111111
generated: "2020-01-01T00:00:00Z"
`,
		"values.yaml": `postgresql:
  enabled: true
  postgresqlDatabase: legacy
`,
		"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ template "legacy.fullname" . }}
data:
  database: {{ .Values.postgresql.postgresqlDatabase | quote }}
`,
		"templates/_helpers.tpl": `{{- define "legacy.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
		"charts/postgresql/Chart.yaml": `apiVersion: v1
name: postgresql
version: 8.6.4
`,
		"charts/postgresql/values.yaml": `postgresqlDatabase: postgres
`,
		"charts/postgresql/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-postgresql
spec:
  serviceName: {{ .Release.Name }}-postgresql
  selector: {matchLabels: {app: postgresql}}
  template:
    metadata: {labels: {app: postgresql}}
    spec:
      containers:
        - name: postgresql
          image: docker.io/bitnami/postgresql:11.7.0
          env:
            - name: POSTGRES_DB
              value: {{ .Values.postgresqlDatabase | quote }}
`,
	})
}
