{{/* Labels of every CRD: the generated ones (app.kubernetes.io/part-of) plus the release's. */}}
{{- define "gw-crds.labels" -}}
app.kubernetes.io/part-of: gw
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
