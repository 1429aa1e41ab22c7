#!/usr/bin/env bash
# Builds metrics-server (sigs.k8s.io/metrics-server/cmd/metrics-server) into
# BIN_DIR/metrics-server, for the real node's executor-resize test: it
# scrapes the kubelet's /metrics/resource and serves metrics.k8s.io through
# the API server's aggregation layer (test/metricsserver).
# A stamp of the pins makes a second run a no-op until a pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.metrics-server-stamp"
want=$(cat "$here"/build.sh "$here"/go.mod "$here"/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/metrics-server" ]; then
  exit 0
fi
export GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)
cd "$here"
version=$(go list -m -f '{{.Version}}' sigs.k8s.io/metrics-server)
echo "building metrics-server $version into $bin"
rm -f "$bin/metrics-server" # may be a symlink to another tree's binary
# The version flags as metrics-server's own Makefile sets them.
go build -trimpath -o "$bin/metrics-server" -ldflags "-s -w \
  -X k8s.io/client-go/pkg/version.gitVersion=$version \
  -X k8s.io/client-go/pkg/version.gitCommit=module-$version \
  -X k8s.io/client-go/pkg/version.buildDate=1970-01-01T00:00:00Z" \
  sigs.k8s.io/metrics-server/cmd/metrics-server
echo "$want" > "$stamp"
echo "metrics-server built in $(( $(date +%s) - start ))s"
