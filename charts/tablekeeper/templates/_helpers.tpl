{{/* Chart name, truncated to 63 characters. */}}
{{- define "tablekeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects. */}}
{{- define "tablekeeper.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "tablekeeper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "tablekeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tablekeeper
{{- end }}

{{/* Labels that select the operator pod. */}}
{{- define "tablekeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tablekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The service account the operator runs as. */}}
{{- define "tablekeeper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tablekeeper.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* registry/repository:tag */}}
{{- define "tablekeeper.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.registry }}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The namespaces where runs are launched (default: the release namespace). */}}
{{- define "tablekeeper.jobNamespaces" -}}
{{- if .Values.jobNamespaces }}
{{- toJson .Values.jobNamespaces }}
{{- else }}
{{- toJson (list .Release.Namespace) }}
{{- end }}
{{- end }}

{{/*
Namespace of launched Spark objects: spark.namespace (one of the job namespaces), else the first
job namespace.
*/}}
{{- define "tablekeeper.sparkNamespace" -}}
{{- $jobs := include "tablekeeper.jobNamespaces" . | fromJsonArray -}}
{{- if .Values.spark.namespace -}}
{{- if not (has .Values.spark.namespace $jobs) -}}
{{- fail (printf "spark.namespace %s must be one of the job namespaces %s (the operator may launch only there)" .Values.spark.namespace (join ", " $jobs)) -}}
{{- end -}}
{{- .Values.spark.namespace -}}
{{- else -}}
{{- first $jobs -}}
{{- end -}}
{{- end -}}

{{/* Labels of the Spark driver's ServiceAccount, Role and RoleBinding (spark-rbac.yaml). */}}
{{- define "tablekeeper.sparkLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "tablekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: spark-driver
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tablekeeper
{{- end }}
