{{/* The release's base name: the release name, or RELEASE-flotilla when it lacks "flotilla". */}}
{{- define "flotilla.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "flotilla.hub" -}}{{ include "flotilla.fullname" . }}-hub{{- end -}}
{{- define "flotilla.agent" -}}{{ include "flotilla.fullname" . }}-agent{{- end -}}

{{- define "flotilla.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The agent's image: agent.image.repository, by default the hub's repository with
"-agent" (ghcr.io/flotilla/flotilla-agent, or a mirror's REGISTRY/flotilla-agent). */}}
{{- define "flotilla.agentRepository" -}}
{{ .Values.agent.image.repository | default (printf "%s-agent" .Values.image.repository) }}
{{- end -}}
{{- define "flotilla.agentImage" -}}
{{ include "flotilla.agentRepository" . }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Labels of every object; component is "hub" or "agent". */}}
{{- define "flotilla.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: flotilla
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
{{- end -}}

{{- define "flotilla.hubSelector" -}}
app.kubernetes.io/name: flotilla-hub
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flotilla.agentSelector" -}}
app.kubernetes.io/name: flotilla-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pod and container security settings of both: non-root, no privilege, read-only root. */}}
{{- define "flotilla.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "flotilla.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities: {drop: [ALL]}
{{- end -}}

{{/* The agent's default hub URL: this release's hub Service when the hub is installed too. */}}
{{- define "flotilla.hubURL" -}}
{{- if .Values.agent.hubURL -}}
{{ .Values.agent.hubURL }}
{{- else if .Values.hub.enabled -}}
https://{{ include "flotilla.hub" . }}.{{ .Release.Namespace }}.svc:{{ .Values.hub.service.agents.port }}
{{- end -}}
{{- end -}}

{{/*
Values that contradict each other, refused with what to do. The schema checks each value's
shape; these checks need several values at once.
*/}}
{{- define "flotilla.validate" -}}
{{- if and (not .Values.hub.enabled) (not .Values.agent.enabled) -}}
{{- fail "neither hub.enabled nor agent.enabled is true: the chart would install nothing" -}}
{{- end -}}
{{- if .Values.hub.enabled -}}
{{- if not .Values.hub.fleet.url -}}
{{- fail "hub.fleet.url is required: the fleet configuration's Git URL (flotilla hub --fleet)" -}}
{{- end -}}
{{- if and (eq .Values.hub.store.type "sqlite") (gt (int .Values.hub.replicas) 1) -}}
{{- fail (printf "hub.replicas is %d with hub.store.type sqlite: SQLite has one writer, so the hub runs one replica; set hub.store.type postgres (and hub.store.postgres.secretName) for several" (int .Values.hub.replicas)) -}}
{{- end -}}
{{- if and (eq .Values.hub.store.type "postgres") (not .Values.hub.store.postgres.secretName) -}}
{{- fail "hub.store.type postgres needs hub.store.postgres.secretName: an existing Secret whose key hub.store.postgres.dsnKey holds the postgres:// URL" -}}
{{- end -}}
{{- if and (eq .Values.hub.store.type "postgres") (not .Values.hub.store.postgres.secretsKeySecretName) -}}
{{- fail "hub.store.type postgres needs hub.store.postgres.secretsKeySecretName: an existing Secret whose key hub.store.postgres.secretsKeyKey holds the key that seals the CA key and admin token in the database (openssl rand -hex 32)" -}}
{{- end -}}
{{- $providers := list -}}
{{- range .Values.hub.webhooks -}}
{{- if has .provider $providers -}}
{{- fail (printf "hub.webhooks names provider %s twice" .provider) -}}
{{- end -}}
{{- $providers = append $providers .provider -}}
{{- end -}}
{{- end -}}
{{- if .Values.agent.enabled -}}
{{- if ne .Release.Namespace "flotilla-system" -}}
{{- fail (printf "the agent keeps its inventories in namespace flotilla-system and must be installed there, not in %s: helm install --namespace flotilla-system --create-namespace ..." .Release.Namespace) -}}
{{- end -}}
{{- if not (include "flotilla.hubURL" .) -}}
{{- fail "agent.hubURL is required (the hub's agent endpoint, https://HOST:PORT) unless hub.enabled installs the hub in this release" -}}
{{- end -}}
{{- end -}}
{{- end -}}
