#!/usr/bin/env bash
# Copies the Gateway API's standard GRPCRoute CRD into
# BIN_DIR/gateway-api-crds for e2e's TestGRPCRouteAgainstTheCRD: from the
# module sigs.k8s.io/gateway-api at a pinned version, downloaded through
# the Go module proxy outside sparklet's module (go.mod stays as it is),
# and checked against the file's pinned sha256. A second run is a no-op.
set -euo pipefail
bin=${1:?usage: crds.sh BIN_DIR}
version=v1.6.3
file=gateway.networking.k8s.io_grpcroutes.yaml
sum=a96b307008290c194ad346f9bb9346dd560c12e4d4e7dfbdbe7d2fb5e812d62e
mkdir -p "$bin/gateway-api-crds"
out="$bin/gateway-api-crds/$file"
if [ -f "$out" ] && echo "$sum  $out" | sha256sum --check --status; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/gateway-api@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
src="$dir/config/crd/standard/$file"
if ! echo "$sum  $src" | sha256sum --check --status; then
  echo "gateway-api $version: $src is missing or its sha256 is not $sum" >&2
  exit 1
fi
cp "$src" "$out.tmp" && chmod u+w "$out.tmp" && mv "$out.tmp" "$out"
echo "gateway-api $version: $file in $bin/gateway-api-crds"
