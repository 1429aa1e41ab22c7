#!/usr/bin/env bash
# Builds cert-manager's controller, cainjector and webhook
# (controller/main.go and cainjector/main.go on the pinned cert-manager
# module; webhook/main.go, a module of its own that requires the same
# version, see there) into BIN_DIR as cert-manager-controller,
# cert-manager-cainjector and cert-manager-webhook, and copies the
# module's CRDs into BIN_DIR/cert-manager-crds. A stamp of the pins makes a
# second run a no-op until a pin changes.
#
# The CRDs are the module's deploy/crds: plain controller-gen output. The
# Helm chart's templates/crd-*.yaml are made from them and add only
# templating, labels and a keep annotation; their spec is the same (checked
# for v1.21.2 by loading both with the template lines dropped and comparing
# spec), so nothing needs rendering.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.certmanager-stamp"
want=$(cat "$here"/build.sh "$here"/go.mod "$here"/go.sum "$here"/*/main.go "$here"/webhook/go.mod "$here"/webhook/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/cert-manager-controller" ] &&
  [ -x "$bin/cert-manager-cainjector" ] && [ -x "$bin/cert-manager-webhook" ] && [ -d "$bin/cert-manager-crds" ]; then
  exit 0
fi
export GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)
cd "$here"
version=$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)
echo "building cert-manager $version (controller, cainjector, webhook) into $bin; the first build takes several minutes"
ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$version"
for cmd in controller cainjector; do
  rm -f "$bin/cert-manager-$cmd" # may be a symlink to another tree's binary
  go build -trimpath -ldflags "$ldflags" -o "$bin/cert-manager-$cmd" "./$cmd"
done
if [ "$(cd webhook && go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)" != "$version" ]; then
  echo "cert-manager: webhook/go.mod must require $version, as go.mod does" >&2
  exit 1
fi
rm -f "$bin/cert-manager-webhook"
(cd webhook && go build -trimpath -ldflags "$ldflags" -o "$bin/cert-manager-webhook" .)
dir=$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
if [ -z "$dir" ] || [ ! -d "$dir/deploy/crds" ]; then
  echo "cert-manager: no deploy/crds in the module directory ${dir:-(not downloaded)}" >&2
  exit 1
fi
rm -rf "$bin/cert-manager-crds" && mkdir -p "$bin/cert-manager-crds"
cp "$dir"/deploy/crds/*.yaml "$bin/cert-manager-crds/"
chmod -R u+w "$bin/cert-manager-crds"
echo "$want" > "$stamp"
echo "cert-manager built in $(( $(date +%s) - start ))s"
