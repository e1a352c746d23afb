#!/usr/bin/env bash
# Builds threshold-liveness.wasm (or the path given as $1) with clang and lld (Debian
# packages clang, lld): plain wasm32, no libc, no WASI, declarations from sdk/c/wasmkube.h.
set -euo pipefail
out="${1:-threshold-liveness.wasm}"
"${CLANG:-clang}" --target=wasm32 -nostdlib -O2 -Wall -Wextra -Werror -mbulk-memory -I ../../../sdk/c \
	-Wl,--no-entry -Wl,--strip-all -o "$out" threshold-liveness.c
