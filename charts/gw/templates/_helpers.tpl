{{/* Names and labels shared by the templates. */}}

{{- define "gw.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's objects are named after it: `helm install gw` gives Service gw, which the proxies dial. */}}
{{- define "gw.fullname" -}}
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

{{- define "gw.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "gw.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gw.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gw
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "gw.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gw.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gw.controllerName" -}}
{{- default "gw.dev/gw" .Values.controllerName }}
{{- end }}

{{- define "gw.gatewayClassName" -}}
{{- default "gw" .Values.gatewayClassName }}
{{- end }}

{{- define "gw.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "gw.proxyImage" -}}
{{- printf "%s:%s" .Values.proxy.image.repository (default (default .Chart.AppVersion .Values.image.tag) .Values.proxy.image.tag) }}
{{- end }}

{{- define "gw.xdsTls" -}}
{{- if ne .Values.controller.xds.mode "plaintext" }}true{{ end }}
{{- end }}

{{/* TLS with the controller's own CA (no certificate Secret given): the Secret it keeps the CA in. */}}
{{- define "gw.xdsOwnCa" -}}
{{- if and (include "gw.xdsTls" .) (not .Values.controller.xds.tls.secretName) }}true{{ end }}
{{- end }}

{{- define "gw.xdsCaSecret" -}}
{{- printf "%s-xds-ca" (include "gw.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* What provisioned proxies dial: the release's Service, https whenever the xDS server speaks TLS (either: new proxies use it). */}}
{{- define "gw.proxyXdsAddress" -}}
{{- if .Values.proxy.xdsAddress }}
{{- .Values.proxy.xdsAddress }}
{{- else if not .Values.controller.service.enabled }}
{{- fail "controller.service.enabled is false, so there is no Service for provisioned proxies to reach xDS through: set proxy.xdsAddress to where they reach the controller" }}
{{- else }}
{{- printf "%s://%s.%s.svc:%d" (ternary "https" "http" (ne .Values.controller.xds.mode "plaintext")) (include "gw.fullname" .) .Release.Namespace (int .Values.controller.service.ports.agwGrpc) }}
{{- end }}
{{- end }}

{{/* Istio read access: istio.autoEnabled decides from the cluster's APIs, else istio.enabled. */}}
{{- define "gw.istio" -}}
{{- if .Values.istio.autoEnabled }}
{{- if .Capabilities.APIVersions.Has "networking.istio.io/v1" }}true{{ end }}
{{- else if .Values.istio.enabled }}true{{ end }}
{{- end }}
