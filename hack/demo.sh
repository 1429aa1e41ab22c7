#!/usr/bin/env bash
# make demo: the walkthrough in README.md's quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/demo --bin bin --dir .cache/demo "$@"
