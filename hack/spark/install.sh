#!/usr/bin/env bash
# Installs each Spark distribution pinned in hack/spark/versions into
# BIN_DIR/spark/<version>, laid out as /opt/spark in the official
# apache/spark image, so that the pod runner can bind it there.
#
# The distribution comes from the pyspark sdist on PyPI, which carries the
# full jar set (Kubernetes resource manager and fabric8 client included).
# The sdist is checked against the pinned sha256 and kept in the cache dir
# (.cache/spark, or SPARK_CACHE_DIR). A stamp of the pin and of this layout
# makes a second run a no-op until either changes; a failed run leaves no
# half-written BIN_DIR/spark/<version>.
set -euo pipefail
bin=${1:?usage: install.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPARK_CACHE_DIR:-$here/../../.cache/spark}
mkdir -p "$bin/spark" "$cache"
bin=$(cd "$bin" && pwd)
cache=$(cd "$cache" && pwd)

# The layout hash: a change to this script or to the examples rebuilds.
layout=$(cat "$here/install.sh" $(find "$here/examples" -type f | LC_ALL=C sort) | sha256sum | cut -d' ' -f1)

tmps=()
cleanup() { if [ ${#tmps[@]} -gt 0 ]; then rm -rf "${tmps[@]}"; fi; }
trap cleanup EXIT

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# fetch VERSION SUM: sets sdist to the verified sdist's path.
fetch() {
  local version=$1 sum=$2
  sdist=$cache/pyspark-$1.tar.gz
  if [ -f "$sdist" ] && [ "$(sha256 "$sdist")" = "$sum" ]; then
    return
  fi
  rm -rf "$cache"/download.* # left by a killed run
  local tmp
  tmp=$(mktemp -d "$cache/download.XXXXXX")
  tmps+=("$tmp")
  echo "spark $version: downloading pyspark==$version from PyPI" >&2
  python3 -m pip download --quiet --no-deps --no-binary pyspark -d "$tmp" "pyspark==$version" >&2
  local got
  got=$(sha256 "$tmp/pyspark-$version.tar.gz")
  if [ "$got" != "$sum" ]; then
    echo "spark $version: pyspark-$version.tar.gz has sha256 $got, but hack/spark/versions pins $sum" >&2
    return 1
  fi
  mv "$tmp/pyspark-$version.tar.gz" "$sdist"
}

# install_one VERSION SCALA SUM STAMP
install_one() {
  local version=$1 scala=$2 sum=$3 stamp=$4 dest=$bin/spark/$1
  local sdist
  fetch "$version" "$sum"
  rm -rf "$bin/spark/.install-$version".* # left by a killed run
  local work
  work=$(mktemp -d "$bin/spark/.install-$version.XXXXXX")
  tmps+=("$work")
  tar -xzf "$sdist" -C "$work" --no-same-owner
  local src=$work/pyspark-$version opt=$work/opt
  if [ ! -f "$src/deps/jars/spark-kubernetes_$scala-$version.jar" ]; then
    echo "spark $version: the sdist has no deps/jars/spark-kubernetes_$scala-$version.jar (is the scala version in hack/spark/versions right?)" >&2
    return 1
  fi

  # What apache/spark-docker's Dockerfile (4.0.0/scala2.13-java17-ubuntu,
  # the same for 3.5.x) moves into /opt/spark: jars, bin, sbin, examples,
  # data, python/pyspark, python/lib, plus an empty work-dir (the WORKDIR).
  # Not here: R, kubernetes/tests and /opt/decom.sh (outside /opt/spark).
  # conf/ is not in the image either, but executors mount their ConfigMap
  # there (SPARK_CONF_DIR=/opt/spark/conf) and a container runtime makes the
  # mount point in the container's layer; the pod runner binds /opt/spark
  # read-only, so the mount point must exist already.
  mkdir -p "$opt/python" "$opt/examples/src/main" "$opt/examples/jars" "$opt/work-dir" "$opt/conf"
  mv "$src/deps/jars" "$src/deps/bin" "$src/deps/sbin" "$src/deps/data" "$opt/"
  mv "$src/deps/examples" "$opt/examples/src/main/python"
  mv "$src/lib" "$opt/python/lib"
  mv "$src/pyspark" "$opt/python/pyspark"
  echo "Spark $version (Scala $scala) from the pyspark $version sdist, sha256 $sum" >"$opt/RELEASE"

  # spark-examples_*.jar is not on Maven Central and the sdist has no jars
  # of examples, so our own SparkPi is built against this version's jars,
  # under the name and path the official image has.
  local jar=spark-examples_$scala-$version.jar
  javac -nowarn -Xlint:-options --release 8 -cp "$opt/jars/*" -d "$work/classes" $(find "$here/examples/src" -name '*.java')
  jar --create --file "$opt/examples/jars/$jar" -C "$work/classes" .
  ln -s "$jar" "$opt/examples/jars/spark-examples.jar"

  echo "$stamp" >"$opt/.stamp"
  if [ -e "$dest" ]; then
    mv "$dest" "$work/old"
  fi
  mv "$opt" "$dest"
  echo "spark $version: installed in $dest" >&2
}

while read -r -u 3 version scala sum rest; do
  case "$version" in '' | '#'*) continue ;; esac
  if [ -z "$sum" ] || [ -n "$rest" ]; then
    echo "hack/spark/versions: want 'version scala sha256', got: $version $scala $sum $rest" >&2
    exit 1
  fi
  stamp="$version $scala $sum layout=$layout"
  if [ "$(cat "$bin/spark/$version/.stamp" 2>/dev/null)" = "$stamp" ]; then
    continue
  fi
  install_one "$version" "$scala" "$sum" "$stamp"
done 3<"$here/versions"
