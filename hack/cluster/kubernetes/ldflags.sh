#!/usr/bin/env bash
# Prints the -ldflags that stamp a binary of this module with the
# Kubernetes version it pins, as Kubernetes' own build does, so the control
# plane and the real node report the same version.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
k8s=$(cd "$here" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s" | cut -d. -f2)
ldk="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldk="$ldk -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z -X $pkg.gitCommit=sparklet-local"
done
echo "$ldk"
