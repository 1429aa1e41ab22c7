#!/usr/bin/env bash
# Builds the Versity S3 Gateway with its posix backend (see main.go) into
# BIN_DIR/versitygw, for the event-log tests' object store. A stamp of the
# pins makes a second run a no-op until a pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.versitygw-stamp"
want=$(cat "$here"/build.sh "$here"/main.go "$here"/go.mod "$here"/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/versitygw" ]; then
  exit 0
fi
export GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)
cd "$here"
version=$(go list -m -f '{{.Version}}' github.com/versity/versitygw)
echo "building versitygw $version into $bin"
rm -f "$bin/versitygw" # may be a symlink to another tree's binary
go build -trimpath -ldflags "-s -w" -o "$bin/versitygw" .
echo "$want" > "$stamp"
echo "versitygw built in $(( $(date +%s) - start ))s"
