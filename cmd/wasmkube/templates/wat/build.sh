#!/usr/bin/env bash
# Builds {{.Module}} (or the path given as $1) from {{.Name}}.wat with wat2wasm (Debian's
# wabt).
set -euo pipefail
out="${1:-{{.Module}}}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
"${WAT2WASM:-wat2wasm}" -o "$out" {{.Name}}.wat
