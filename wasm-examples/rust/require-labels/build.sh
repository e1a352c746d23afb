#!/usr/bin/env bash
# Builds require-labels.wasm (or the path given as $1) with Debian's cargo and rustc
# (packages cargo, rustc, libstd-rust-dev-wasm32), offline: the only dependency is the SDK
# in sdk/rust, by path. The Rust examples share one target folder, so the SDK is compiled
# once and an unchanged example rebuilds in a fraction of a second.
set -euo pipefail
out="${1:-require-labels.wasm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}"
# /usr/bin is named because a rustup toolchain earlier on PATH may lack the wasm32 std.
RUSTC="${RUSTC:-/usr/bin/rustc}" "${CARGO:-/usr/bin/cargo}" build --offline --quiet --release --target wasm32-unknown-unknown
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/require_labels.wasm" "$out"
