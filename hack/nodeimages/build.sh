#!/usr/bin/env bash
# Builds the images a real node runs besides sparklet's own, without a
# container engine or a registry, into BIN_DIR/images/ (docs/real-node.md):
#   pause.tar        the pause image, named as in ./sandbox-image
#   kubectl.tar      registry.k8s.io/kubectl:<the pinned Kubernetes>, for helm test
#   spark-<v>.tar    apache/spark:<v> and its other tags, for each pin in
#                    hack/spark/versions, from BIN_DIR/spark/<v> (make
#                    spark-dists; SPARK_DIST_DIR overrides) on a Debian
#                    bookworm rootfs from mmdebstrap
# Each piece has a stamp of its inputs in BIN_DIR/images and is rebuilt
# only when they change; a second run is a no-op. Downloads and rootfs
# tarballs are kept in .cache/nodeimages (NODEIMAGES_CACHE_DIR). Needs root
# for mmdebstrap (hack/apt-install.sh installs it when missing).
set -euo pipefail
bin=${1:?usage: build.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$bin/images"
bin=$(cd "$bin" && pwd)
images=$bin/images
dists=${SPARK_DIST_DIR:-$bin/spark}
cache=${NODEIMAGES_CACHE_DIR:-$repo/.cache/nodeimages}
mkdir -p "$cache"
# Every file and image is dated 1970-01-01, so the same inputs give the
# same bytes.
export SOURCE_DATE_EPOCH=0
export CGO_ENABLED=0

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
# fresh PIECE STAMP: whether PIECE was built from these inputs.
fresh() { [ "$(cat "$images/.$1-stamp" 2>/dev/null)" = "$2" ] && [ -s "$images/$1.tar" ]; }
# done_piece PIECE STAMP START: records the stamp and says how long it took.
done_piece() {
  echo "$2" >"$images/.$1-stamp"
  echo "nodeimages: $1 built in $(($(date +%s) - $3))s" >&2
}

gov=$(go env GOVERSION)
tool=$(hash_of "$here/build.sh" "$repo"/hack/image/go.mod "$repo"/hack/image/go.sum "$repo"/hack/image/nodeimages/*.go)
builder=$cache/nodeimages-$tool
if [ ! -x "$builder" ]; then
  (cd "$repo/hack/image" && GOFLAGS=-mod=mod go build -trimpath -o "$builder" ./nodeimages)
fi

# The pause image: hack/nodeimages/pause as /pause, user 65535 as the
# upstream image. Also tagged with the pause images the tests name.
sandbox=$(cat "$here/sandbox-image")
stamp="$tool $gov $(hash_of "$here/sandbox-image" "$here"/pause/*.go)"
if ! fresh pause "$stamp"; then
  start=$(date +%s)
  (cd "$repo" && go build -trimpath -ldflags '-s -w' -o "$cache/pause" ./hack/nodeimages/pause)
  "$builder" binary --binary "$cache/pause" --path /pause --user 65535:65535 --title pause \
    --tag "$sandbox" --tag registry.k8s.io/pause:3.10 --tag registry.k8s.io/pause:3.7 \
    --out "$images/pause.tar" >"$images/pause.txt"
  done_piece pause "$stamp" "$start"
fi

# The kubectl image: kubectl of the Kubernetes version hack/cluster pins,
# built from a copy of that module (so its go.mod stays as it is) as
# /bin/kubectl, the entrypoint, as registry.k8s.io/kubectl has it.
k8smod=$repo/hack/cluster/kubernetes
stamp="$tool $gov $(hash_of "$k8smod/go.mod" "$k8smod/go.sum")"
if ! fresh kubectl "$stamp"; then
  start=$(date +%s)
  mod=$cache/kubectl-module
  rm -rf "$mod" && mkdir -p "$mod" && cp "$k8smod/go.mod" "$k8smod/go.sum" "$mod/"
  k8s=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
  ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$k8s" | cut -d. -f2) -X $pkg.gitTreeState=clean"
  done
  echo "nodeimages: building kubectl $k8s" >&2
  (cd "$mod" && GOFLAGS=-mod=mod GONOSUMDB=k8s.io/kubernetes go build -trimpath -ldflags "$ld" -o "$cache/kubectl" k8s.io/kubernetes/cmd/kubectl)
  "$builder" binary --binary "$cache/kubectl" --path /bin/kubectl --title kubectl --version "$k8s" \
    --tag "registry.k8s.io/kubectl:$k8s" --out "$images/kubectl.tar" >"$images/kubectl.txt"
  done_piece kubectl "$stamp" "$start"
fi

# The Spark images' rootfs (a no-op when fresh), then the versions whose
# image is not fresh, built in one run of the builder
# so that the base and python layers are made once.
"$here/spark/rootfs.sh" "$cache"
todo=() stamps=()
while read -r -u 3 version scala _; do
  case "$version" in '' | '#'*) continue ;; esac
  dist=$dists/$version
  if [ ! -f "$dist/.stamp" ]; then
    echo "nodeimages: no Spark $version in $dist: run make spark-dists (or set SPARK_DIST_DIR)" >&2
    exit 1
  fi
  stamp="$tool $(cat "$cache"/rootfs-*.stamp 2>/dev/null) $(hash_of "$here/spark/entrypoint.sh" "$here/spark/decom.sh" "$dist/.stamp")"
  if ! fresh "spark-$version" "$stamp"; then
    todo+=("$version:$scala:$dist")
    stamps+=("$stamp")
  fi
done 3<"$repo/hack/spark/versions"
if [ ${#todo[@]} -gt 0 ]; then
  start=$(date +%s)
  out=$("$builder" spark --base-rootfs "$cache/rootfs-base.tar" --python-rootfs "$cache/rootfs-python.tar" \
    --entrypoint "$here/spark/entrypoint.sh" --decom "$here/spark/decom.sh" --out-dir "$images" "${todo[@]}")
  for i in "${!todo[@]}"; do
    version=${todo[$i]%%:*}
    grep "^$images/spark-$version.tar " <<<"$out" >"$images/spark-$version.txt"
    echo "${stamps[$i]}" >"$images/.spark-$version-stamp"
  done
  echo "nodeimages: spark ${todo[*]%%:*} built in $(($(date +%s) - start))s" >&2
fi
