{{- /*
sparklet.policyYAML is the policy the webhook runs with: .Values.policy
with sidecar.image, sidecar.imagePullPolicy and
driver.defaults.serviceAccountName filled in unless set. The policy
ConfigMap and the pre-install/pre-upgrade check share it.
*/ -}}
{{- define "sparklet.policyYAML" -}}
{{- $p := deepCopy (.Values.policy | default dict) }}
{{- $sidecar := get $p "sidecar" | default dict }}
{{- if not (hasKey $sidecar "image") }}{{- $_ := set $sidecar "image" (include "sparklet.image" .) }}{{- end }}
{{- if not (hasKey $sidecar "imagePullPolicy") }}{{- $_ := set $sidecar "imagePullPolicy" .Values.image.pullPolicy }}{{- end }}
{{- $_ := set $p "sidecar" $sidecar }}
{{- $driver := get $p "driver" | default dict }}
{{- $defaults := get $driver "defaults" | default dict }}
{{- if not (hasKey $defaults "serviceAccountName") }}{{- $_ := set $defaults "serviceAccountName" .Values.driver.serviceAccountName }}{{- end }}
{{- $_ := set $driver "defaults" $defaults }}
{{- $_ := set $p "driver" $driver }}
{{- toYaml $p }}
{{- end -}}
