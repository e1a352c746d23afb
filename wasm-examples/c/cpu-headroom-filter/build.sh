#!/usr/bin/env bash
# Builds cpu-headroom-filter.wasm (or the path given as $1) with clang and lld (Debian
# packages clang, lld): plain wasm32, no libc, no WASI, exports named in the source.
set -euo pipefail
out="${1:-cpu-headroom-filter.wasm}"
"${CLANG:-clang}" --target=wasm32 -nostdlib -O2 -Wall -Wextra -Werror \
	-Wl,--no-entry -Wl,--strip-all -o "$out" cpu-headroom-filter.c
