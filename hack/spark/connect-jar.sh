#!/usr/bin/env bash
# Downloads the pinned Spark Connect server jar (hack/spark/connect-jar)
# from Maven Central into the cache dir (.cache/spark, or SPARK_CACHE_DIR)
# and checks its sha256; a jar already there with that sha256 is kept, so
# a second run costs one checksum.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPARK_CACHE_DIR:-$here/../../.cache/spark}
read -r group artifact version sum < <(grep -v '^#' "$here/connect-jar" | grep .)
jar=$cache/$artifact-$version.jar
if [ -f "$jar" ] && [ "$(sha256sum "$jar" | cut -d' ' -f1)" = "$sum" ]; then
  exit 0
fi
mkdir -p "$cache"
url=https://repo1.maven.org/maven2/${group//.//}/$artifact/$version/$artifact-$version.jar
echo "spark connect: downloading $url" >&2
tmp=$(mktemp "$cache/download.XXXXXX")
trap 'rm -f "$tmp"' EXIT
curl -fsSL --retry 3 -o "$tmp" "$url"
got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ "$got" != "$sum" ]; then
  echo "spark connect: $url has sha256 $got, but hack/spark/connect-jar pins $sum" >&2
  exit 1
fi
chmod 644 "$tmp"
mv "$tmp" "$jar"
