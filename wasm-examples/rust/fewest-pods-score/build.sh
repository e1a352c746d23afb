#!/usr/bin/env bash
# Builds fewest-pods-score.wasm (or the path given as $1) with Debian's rustc (package rustc + libstd-rust-dev-wasm32).
# /usr/bin/rustc is used explicitly: a rustup toolchain earlier on PATH may lack the wasm32 std.
set -euo pipefail
RUSTC="${RUSTC:-/usr/bin/rustc}"
"$RUSTC" --edition 2021 --target wasm32-unknown-unknown --crate-type cdylib \
	-C opt-level=2 -C panic=abort -C debuginfo=0 -C strip=symbols \
	-o "${1:-fewest-pods-score.wasm}" fewest-pods-score.rs
