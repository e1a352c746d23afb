#!/usr/bin/env bash
# Builds {{.Module}} (or the path given as $1) with the AssemblyScript compiler and the
# SDK's build settings (asconfig.json extends them). The first build runs npm install:
# assemblyscript {{.ASVersion}} from the npm registry, the SDK from the wasmkube source tree.
set -euo pipefail
out="${1:-{{.Module}}}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
asc=node_modules/.bin/asc
if [ ! -x "$asc" ]; then
	"${NPM:-npm}" install --no-audit --no-fund --prefer-offline
fi
"$asc" --config asconfig.json --outFile "$out"
