{{- /* name: nameOverride or "sparklet"; it names the app label. */ -}}
{{- define "sparklet.name" -}}{{ .Values.nameOverride | default "sparklet" | trunc 40 | trimSuffix "-" }}{{- end -}}
{{- /* fullname names the Service and prefixes every other object:
fullnameOverride, or <release>-<name>; at most 63 characters (a Service name). */ -}}
{{- define "sparklet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" (.Release.Name | trunc 40 | trimSuffix "-") (include "sparklet.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- define "sparklet.labels" -}}
app.kubernetes.io/name: {{ include "sparklet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- define "sparklet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sparklet.name" . }}
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

{{- /* certManagerCheck fails an install or upgrade in cert-manager mode on a
cluster without cert-manager's API, naming the value to change. Offline
(helm template, helm lint) there is no cluster to ask: lookup returns
nothing, and the chart renders what the values ask for. */ -}}
{{- define "sparklet.certManagerCheck" -}}
{{- if and .Values.tls.certManager.enabled (not (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- if lookup "v1" "Namespace" "" "kube-system" -}}
{{- fail "tls.certManager.enabled is true, but this cluster has no cert-manager (API cert-manager.io/v1 is not served). Install cert-manager first, or set tls.certManager.enabled=false: the webhook then manages its own certificate (tls.selfManagedSecret), or uses tls.existingSecret with tls.caBundle." -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sparklet.historySelectorLabels" -}}
app.kubernetes.io/name: {{ include "sparklet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: history-server
{{- end -}}

{{- /* historyHeap is the HistoryServer's SPARK_DAEMON_MEMORY: three
quarters of its memory limit in MiB, or Spark's 1g without a limit. */ -}}
{{- define "sparklet.historyHeap" -}}
{{- $limit := dig "limits" "memory" "" (.Values.history.server.resources | default dict) | toString -}}
{{- if regexMatch "^[0-9]+Gi$" $limit -}}{{ div (mul (trimSuffix "Gi" $limit | int) 1024 3) 4 }}m
{{- else if regexMatch "^[0-9]+Mi$" $limit -}}{{ div (mul (trimSuffix "Mi" $limit | int) 3) 4 }}m
{{- else -}}1g
{{- end -}}
{{- end -}}

{{- /* reapKeptExecutors is "true" when the policy keeps failed executors for
their logs (logs.keepFailedExecutorsSeconds, cluster-wide or in a namespace
section): the webhook then deletes them when their window ends, also after
their driver ended (--reap-kept-executors), with the grants of
kept-executors-rbac.yaml. */ -}}
{{- define "sparklet.reapKeptExecutors" -}}
{{- $p := .Values.policy | default dict -}}
{{- $sections := list $p -}}
{{- range $_, $ns := (get $p "namespaces" | default dict) }}{{ $sections = append $sections ($ns | default dict) }}{{ end -}}
{{- $keep := false -}}
{{- range $sections }}{{ if gt (dig "logs" "keepFailedExecutorsSeconds" 0 . | int) 0 }}{{ $keep = true }}{{ end }}{{ end -}}
{{- if $keep }}true{{ end -}}
{{- end -}}

{{- /* webhookUsesAPI: the webhook talks to the API server (self-managed
certificates, or the reaper of kept executors), so it mounts its token. */ -}}
{{- define "sparklet.webhookUsesAPI" -}}
{{- or (eq (include "sparklet.tlsMode" .) "self") (eq (include "sparklet.reapKeptExecutors" .) "true") -}}
{{- end -}}
