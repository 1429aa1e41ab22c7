{{- /*
sparklet.policyYAML is the policy the webhook runs with: .Values.policy
with sidecar.image, sidecar.imagePullPolicy,
driver.defaults.serviceAccountName and mesh.apiServerCIDRs filled in unless
set. The policy
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
{{- /* The API server's ClusterIP, which a mesh's proxy must let the
sidecar reach directly (docs/meshes.md); known only when helm talks to a
cluster, and never replacing what the values set. */ -}}
{{- $mesh := get $p "mesh" | default dict }}
{{- if not (hasKey $mesh "apiServerCIDRs") }}
{{- with lookup "v1" "Service" "default" "kubernetes" }}
{{- $ip := .spec.clusterIP }}
{{- $_ := set $mesh "apiServerCIDRs" (list (printf "%s/%s" $ip (ternary "128" "32" (contains ":" $ip)))) }}
{{- $_ := set $p "mesh" $mesh }}
{{- end }}
{{- end }}
{{- toYaml $p }}
{{- end -}}
