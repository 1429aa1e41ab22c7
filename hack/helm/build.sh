#!/usr/bin/env bash
# Builds helm from Go modules into BIN_DIR; a no-op until the pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.helm-stamp"
want=$(cat "$here"/build.sh "$here"/go.mod "$here"/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/helm" ]; then
  exit 0
fi
cd "$here"
version=$(GOFLAGS=-mod=mod go list -m -f '{{.Version}}' helm.sh/helm/v3)
# As helm's own Makefile does: the Kubernetes version helm assumes without
# a cluster (helm template, helm lint) is one minor past its client-go's
# (v0.N.x is Kubernetes 1.N); unset, helm assumes 1.20, which the chart's
# kubeVersion refuses.
kube=$(GOFLAGS=-mod=mod go list -m -f '{{.Version}}' k8s.io/client-go)
kube_minor=$(echo "$kube" | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kube_minor"
done
echo "building helm $version (assumes Kubernetes 1.$kube_minor) into $bin"
rm -f "$bin/helm" # may be a symlink to another tree's helm
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$bin/helm" helm.sh/helm/v3/cmd/helm
echo "$want" > "$stamp"
