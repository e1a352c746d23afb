#!/usr/bin/env bash
# Builds every example plugin into <name>.wasm beside its source:
#   wasm-examples/go/<name>/    Go guests: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
#   wasm-examples/wat/<name>/   WebAssembly text: wat2wasm <name>.wat
#   wasm-examples/<lang>/<name>/build.sh   any other language builds itself (run from its folder;
#                                          C: clang + lld, Rust: Debian's cargo and rustc, offline,
#                                          on sdk/rust; AssemblyScript: the asc that deps.sh
#                                          installs with npm ci, on sdk/assemblyscript)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
GO="${GO:-go}"
built=0

for dir in wasm-examples/go/*/; do
	[ -f "$dir/main.go" ] || continue
	name="$(basename "$dir")"
	echo "build-examples: $dir$name.wasm"
	GOOS=wasip1 GOARCH=wasm "$GO" build -buildmode=c-shared -o "$dir$name.wasm" "./$dir"
	built=$((built + 1))
done

for dir in wasm-examples/wat/*/; do
	name="$(basename "$dir")"
	[ -f "$dir$name.wat" ] || continue
	command -v wat2wasm >/dev/null || { echo "build-examples: wat2wasm not found (install wabt: scripts/deps.sh)" >&2; exit 1; }
	echo "build-examples: $dir$name.wasm"
	wat2wasm -o "$dir$name.wasm" "$dir$name.wat"
	built=$((built + 1))
done

for script in wasm-examples/*/*/build.sh; do
	[ -f "$script" ] || continue
	case "$script" in wasm-examples/go/* | wasm-examples/wat/*) continue ;; esac
	echo "build-examples: $script"
	(cd "$(dirname "$script")" && bash ./build.sh)
	built=$((built + 1))
done

echo "build-examples: $built example(s) built"
