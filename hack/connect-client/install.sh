#!/usr/bin/env bash
# Installs the pinned Spark Connect Python client (requirements.txt) into
# DIR (default .cache/connect-client/site) with pip, for the e2e tests that
# connect through the sidecar. A stamp of the pins makes a second run a
# no-op until they change.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../.cache/connect-client/site}
stamp=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ]; then
  exit 0
fi
rm -rf "$dest.tmp"
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest.tmp" -r "$here/requirements.txt"
echo "$stamp" >"$dest.tmp/.stamp"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
