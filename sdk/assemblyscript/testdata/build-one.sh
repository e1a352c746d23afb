#!/usr/bin/env bash
# Builds the test module in the current folder (index.ts) into $2, for its build.sh:
# `bash ../build-one.sh NAME OUT`, with the SDK's own asc (npm ci in sdk/assemblyscript:
# scripts/deps.sh). The SDK is imported by relative path here, so the env replacements are
# named by that path instead of asconfig.json's ~lib/wasmkube ones.
set -euo pipefail
name="$1"
asc=../../node_modules/.bin/asc
[ -x "$asc" ] || { echo "$name: $asc is missing: run scripts/deps.sh (npm ci in sdk/assemblyscript)" >&2; exit 1; }
cache="../build/$name.wasm"
if [ ! -f "$cache" ] || [ -n "$(find index.ts ../../assembly ../../node_modules/assemblyscript/package.json -newer "$cache" | head -1)" ]; then
	mkdir -p ../build
	"$asc" index.ts --outFile "$cache.tmp" --runtime incremental --exportStart _initialize -O3 \
		--use abort=../../assembly/env/wasmkubeAbort --use trace=../../assembly/env/wasmkubeTrace --use seed=../../assembly/env/wasmkubeSeed
	mv "$cache.tmp" "$cache"
fi
cp "$cache" "${2:-$name.wasm}"
