#!/usr/bin/env bash
# rootfs.sh CACHE_DIR: the Spark images' Debian bookworm rootfs tarballs,
# CACHE_DIR/rootfs-base.tar and CACHE_DIR/rootfs-python.tar (the same with
# python3 added; its difference becomes the images' python layer), from
# the packages in ./packages and this machine's apt sources, by mmdebstrap
# with SOURCE_DATE_EPOCH=0. A stamp of those inputs makes a second run a
# no-op; mmdebstrap is installed when missing. Needs root.
set -euo pipefail
cache=${1:?usage: rootfs.sh CACHE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export SOURCE_DATE_EPOCH=0

sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  if [ -f "$f" ] && grep -q '^[^#]' "$f"; then
    sources+=("$f")
  fi
done
if [ ${#sources[@]} -eq 0 ]; then
  echo "rootfs.sh: no apt sources in /etc/apt/sources.list or /etc/apt/sources.list.d: mmdebstrap needs a Debian mirror" >&2
  exit 1
fi
stamp=$(cat "$here/rootfs.sh" "$here/packages" "$here/customize.sh" "${sources[@]}" | sha256sum | cut -d' ' -f1)

# packages SET...: the packages of those sets in ./packages, comma-separated.
packages() {
  awk -v sets=" $* " 'index(sets, " " $1 " ") { for (i = 2; i <= NF; i++) printf "%s,", $i }' "$here/packages" | sed 's/,$//'
}

build() { # NAME SET...
  local name=$1 out=$cache/rootfs-$1.tar
  shift
  if [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && [ -s "$out" ]; then
    return
  fi
  command -v mmdebstrap >/dev/null || "$here/../../apt-install.sh" mmdebstrap
  local start
  start=$(date +%s)
  local tmp
  tmp=$(mktemp "$out.XXXXXX")
  # As Ubuntu's minimised images (the official images' base) do: no man
  # pages, docs but the copyright files, or translations, also for what is
  # installed later (mmdebstrap keeps the options in /etc/dpkg/dpkg.cfg.d).
  # The JRE's postinst links its man pages into man1, which must exist.
  mmdebstrap --quiet --format=tar --variant=minbase --include="$(packages "$@")" --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --essential-hook='mkdir -p "$1/usr/share/man/man1"' \
    --customize-hook="\"$here/customize.sh\" \"\$1\"" \
    bookworm "$tmp" "${sources[@]}"
  chmod 644 "$tmp" && mv "$tmp" "$out"
  echo "$stamp" >"$out.stamp"
  echo "nodeimages: rootfs $name ($*) in $(($(date +%s) - start))s" >&2
}

mkdir -p "$cache"
# One run at a time: another waits, then finds the rootfs fresh.
exec 9>"$cache/rootfs.lock"
flock 9
rm -f "$cache"/rootfs-*.tar.?????? # left by a killed run
build base base
build python base python
