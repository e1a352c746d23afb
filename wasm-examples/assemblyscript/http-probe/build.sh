#!/usr/bin/env bash
# Builds http-probe.wasm (or the path given as $1) with the AssemblyScript
# compiler that scripts/deps.sh installs (npm ci in wasm-examples/assemblyscript, which also
# links the SDK from sdk/assemblyscript), with the SDK's build settings (asconfig.json
# extends them).
set -euo pipefail
name=http-probe
out="${1:-$name.wasm}"
asc=../node_modules/.bin/asc
[ -x "$asc" ] || { echo "$name: $asc is missing: run scripts/deps.sh (npm ci in wasm-examples/assemblyscript)" >&2; exit 1; }
# asc takes seconds (node start-up and Binaryen's optimiser): reuse the last build while
# neither this plugin, the SDK nor the compiler changed.
cache="build/$name.wasm"
if [ ! -f "$cache" ] || [ -n "$(find assembly asconfig.json ../node_modules/wasmkube/assembly ../node_modules/wasmkube/asconfig.json ../node_modules/assemblyscript/package.json -newer "$cache" 2>/dev/null | head -1)" ]; then
	mkdir -p build
	"$asc" --config asconfig.json --outFile "$cache.tmp"
	mv "$cache.tmp" "$cache"
fi
cp "$cache" "$out"
