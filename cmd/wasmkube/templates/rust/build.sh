#!/usr/bin/env bash
# Builds {{.Module}} (or the path given as $1) with Debian's cargo and rustc (packages
# cargo, rustc, libstd-rust-dev-wasm32), offline: the only dependency is the SDK, by path.
# wasm32-unknown-unknown imports nothing but what the code declares (no WASI, no env).
set -euo pipefail
out="${1:-{{.Module}}}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# /usr/bin is named because a rustup toolchain earlier on PATH may lack the wasm32 std.
RUSTC="${RUSTC:-/usr/bin/rustc}" "${CARGO:-/usr/bin/cargo}" build --offline --quiet --release --target wasm32-unknown-unknown
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/{{.Crate}}.wasm" "$out"
