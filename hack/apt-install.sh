#!/usr/bin/env bash
# apt-get install PKG..., waiting while another process holds the apt or
# dpkg lock (several builds may share a machine) instead of failing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
sudo=
[ "$(id -u)" = 0 ] || sudo="sudo -n"

apt() {
  local out
  for _ in $(seq 60); do
    if out=$($sudo apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1); then
      return 0
    fi
    if ! grep -qiE 'could not get lock|unable to (acquire|lock)|is another process using it' <<<"$out"; then
      echo "$out" >&2
      return 1
    fi
    sleep 5
  done
  echo "$out" >&2
  echo "apt-get $*: the apt lock stayed held for 15 minutes" >&2
  return 1
}

apt update -qq
apt install -y -qq --no-install-recommends "$@"
