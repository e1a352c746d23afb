#!/usr/bin/env bash
# Builds the Rust example in the current folder into $2 (default <name>.wasm), for its
# build.sh: `bash ../cargo-build.sh NAME [OUT]`. Debian's cargo and rustc (packages cargo,
# rustc, libstd-rust-dev-wasm32), offline: the only dependency is the SDK in sdk/rust, by
# path. The examples share one target folder, so the SDK is compiled once and an unchanged
# example rebuilds in a fraction of a second. /usr/bin is named because a rustup toolchain
# earlier on PATH may lack the wasm32 std; set CARGO and RUSTC to override.
set -euo pipefail
name="$1"
out="${2:-$name.wasm}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}"
RUSTC="${RUSTC:-/usr/bin/rustc}" "${CARGO:-/usr/bin/cargo}" build --offline --quiet --release --target wasm32-unknown-unknown
cp "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/${name//-/_}.wasm" "$out"
