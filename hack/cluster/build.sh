#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kwok and kwok's stage files) into BIN_DIR.
# A stamp of the pins makes a second run a no-op until a pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
stamp="$bin/.cluster-stamp"
want=$(cat "$here"/build.sh "$here"/kubernetes/ldflags.sh "$here"/*/go.mod "$here"/*/go.sum | sha256sum | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$want" = "$have" ] && [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ] && [ -x "$bin/kwok" ] && [ -d "$bin/kwok-stages" ]; then
  exit 0
fi
export GONOSUMDB=k8s.io/kubernetes GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)

k8s=$(cd "$here/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
ldk=$("$here/kubernetes/ldflags.sh")
echo "building the local control plane into $bin (kubernetes $k8s; first build takes several minutes)"
(cd "$here/kubernetes" && go build -trimpath -ldflags "$ldk" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
(cd "$here/kwok" && go build -trimpath -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)

# kwok's stage files ship in its module: pods go Running, nodes stay Ready.
kwokdir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
rm -rf "$bin/kwok-stages" && mkdir -p "$bin/kwok-stages"
for f in "$kwokdir"/kustomize/stage/pod/fast/*.yaml "$kwokdir"/kustomize/stage/node/fast/*.yaml; do
  case "$(basename "$f")" in kustomization.yaml) continue ;; esac
  cp "$f" "$bin/kwok-stages/$(basename "$(dirname "$(dirname "$f")")")-$(basename "$f")"
done
chmod -R u+w "$bin/kwok-stages"
echo "$want" > "$stamp"
echo "control plane built in $(( $(date +%s) - start ))s"
