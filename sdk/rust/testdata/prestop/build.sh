#!/usr/bin/env bash
# Builds prestop.wasm (or the path given as $1) with Debian's cargo and rustc, offline.
set -euo pipefail
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd ../.. && pwd)/target}"
RUSTC="${RUSTC:-/usr/bin/rustc}" "${CARGO:-/usr/bin/cargo}" build --offline --quiet --release --target wasm32-unknown-unknown
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/prestop.wasm" "${1:-prestop.wasm}"
