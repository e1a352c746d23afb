#!/usr/bin/env bash
# Builds {{.Module}} (or the path given as $1) with Go's wasip1 port: -buildmode=c-shared
# makes a reactor (an exported _initialize, no start section) whose //go:wasmexport
# functions are the entry points the SDK's packages declare.
set -euo pipefail
out="${1:-{{.Module}}}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
GOOS=wasip1 GOARCH=wasm "${GO:-go}" build -buildmode=c-shared -o "$out" .
