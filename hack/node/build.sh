#!/usr/bin/env bash
# Builds the real node (test/node) into BIN_DIR: the kubelet and kube-proxy
# of the Kubernetes version the control plane pins (hack/cluster/kubernetes),
# containerd, ctr and the runc shim (hack/node/containerd), and CoreDNS with
# the plugins cluster DNS needs (hack/node/coredns). runc, the CNI plugins
# and nft come from Debian's packages. A stamp of the pins makes a second
# run a no-op until a pin changes.
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
k8sdir=$(cd "$here/../cluster/kubernetes" && pwd)
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)

# Debian's packages: runc 1.1 runs containers here; the CNI plugins land
# in /usr/lib/cni; kube-proxy's nftables mode runs nft.
missing=()
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v nft >/dev/null || missing+=(nftables)
command -v nsenter >/dev/null || missing+=(util-linux)
if [ ${#missing[@]} -gt 0 ]; then
  "$here/../apt-install.sh" "${missing[@]}"
fi

stamp="$bin/.node-stamp"
want=$(cat "$here"/build.sh "$here"/*/go.mod "$here"/*/go.sum "$here"/coredns/main.go "$k8sdir"/ldflags.sh "$k8sdir"/go.mod "$k8sdir"/go.sum | sha256sum | cut -d' ' -f1)
if [ "$want" = "$(cat "$stamp" 2>/dev/null || true)" ] && [ -x "$bin/kubelet" ] && [ -x "$bin/kube-proxy" ] &&
  [ -x "$bin/containerd" ] && [ -x "$bin/containerd-shim-runc-v2" ] && [ -x "$bin/ctr" ] && [ -x "$bin/coredns" ]; then
  exit 0
fi
export GOFLAGS=-mod=mod CGO_ENABLED=0
start=$(date +%s)

# The kubelet and kube-proxy carry the version the control plane's binaries
# carry (hack/cluster/build.sh), so the node reports the same version.
k8s=$(cd "$k8sdir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
ldk=$("$k8sdir/ldflags.sh")
echo "building the real node into $bin (kubernetes $k8s; first build takes several minutes)"
(cd "$k8sdir" && GONOSUMDB=k8s.io/kubernetes go build -trimpath -ldflags "$ldk" -o "$bin/" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)

ctrd=$(cd "$here/containerd" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
(cd "$here/containerd" && go build -trimpath -o "$bin/" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$ctrd -X github.com/containerd/containerd/v2/version.Revision=module-$ctrd" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr)

(cd "$here/coredns" && go build -trimpath -ldflags "-s -w" -o "$bin/coredns" .)
echo "$want" > "$stamp"
echo "real node built in $(( $(date +%s) - start ))s"
