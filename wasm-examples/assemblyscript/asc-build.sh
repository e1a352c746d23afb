#!/usr/bin/env bash
# Builds the AssemblyScript example in the current folder into $2 (default <name>.wasm), for
# its build.sh: `bash ../asc-build.sh NAME [OUT]`. It uses the asc that scripts/deps.sh
# installs (npm ci in wasm-examples/assemblyscript, which also links the SDK from
# sdk/assemblyscript) and the example's asconfig.json, which extends the SDK's build
# settings. asc takes seconds (node start-up and Binaryen's optimiser): the last build is
# kept in build/ and reused while neither the plugin, the SDK nor the compiler changed.
set -euo pipefail
name="$1"
out="${2:-$name.wasm}"
asc=../node_modules/.bin/asc
[ -x "$asc" ] || { echo "$name: $asc is missing: run scripts/deps.sh (npm ci in wasm-examples/assemblyscript)" >&2; exit 1; }
cache="build/$name.wasm"
if [ ! -f "$cache" ] || [ -n "$(find assembly asconfig.json ../node_modules/wasmkube/assembly ../node_modules/wasmkube/asconfig.json ../node_modules/assemblyscript/package.json -newer "$cache" 2>/dev/null | head -1)" ]; then
	mkdir -p build
	"$asc" --config asconfig.json --outFile "$cache.tmp"
	mv "$cache.tmp" "$cache"
fi
cp "$cache" "$out"
