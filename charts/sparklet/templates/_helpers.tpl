{{- define "sparklet.name" -}}sparklet{{- end -}}
{{- define "sparklet.fullname" -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}-sparklet{{- end -}}
{{- define "sparklet.labels" -}}
app.kubernetes.io/name: sparklet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "sparklet.selectorLabels" -}}
app.kubernetes.io/name: sparklet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end -}}
{{- define "sparklet.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}
{{- /* tlsMode: certManager, existingSecret or self */ -}}
{{- define "sparklet.tlsMode" -}}
{{- if .Values.tls.certManager.enabled -}}certManager{{- else if .Values.tls.existingSecret -}}existingSecret{{- else -}}self{{- end -}}
{{- end -}}
{{- define "sparklet.tlsSecret" -}}
{{- if .Values.tls.certManager.enabled -}}{{ include "sparklet.fullname" . }}-tls{{- else -}}{{ .Values.tls.existingSecret }}{{- end -}}
{{- end -}}
