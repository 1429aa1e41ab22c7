#!/usr/bin/env bash
# Builds the Apache YuniKorn scheduler (the k8s shim, core embedded; see
# main.go) from Go modules into BIN_DIR/yunikorn-scheduler. A stamp of the
# pins makes a second run a no-op until a pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.yunikorn-stamp"
want=$(cat "$here"/build.sh "$here"/go.mod "$here"/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/yunikorn-scheduler" ]; then
  exit 0
fi
# The checksum database here does not answer for these modules (404); go.sum
# pins their hashes.
export GONOSUMDB=github.com/apache/yunikorn-k8shim,github.com/apache/yunikorn-core,github.com/apache/yunikorn-scheduler-interface,k8s.io/kubernetes
export GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)
cd "$here"
shim=$(go list -m -f '{{.Version}}' github.com/apache/yunikorn-k8shim)
core=$(go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' github.com/apache/yunikorn-core)
# The version the scheduler logs at start ("Build info: ..."), as the
# shim's own Makefile sets it.
conf=github.com/apache/yunikorn-k8shim/pkg/conf
ldflags="-s -w -X $conf.buildVersion=$shim -X $conf.buildDate=1970-01-01T00:00:00Z -X $conf.coreSHA=$core -X $conf.shimSHA=$shim"
echo "building yunikorn-scheduler (yunikorn-k8shim $shim, yunikorn-core $core) into $bin; the first build takes several minutes"
rm -f "$bin/yunikorn-scheduler" # may be a symlink to another tree's binary
go build -trimpath -ldflags "$ldflags" -o "$bin/yunikorn-scheduler" .
echo "$want" > "$stamp"
echo "yunikorn-scheduler built in $(( $(date +%s) - start ))s"
