#!/usr/bin/env bash
# Builds disallow-latest-tag.wasm (or the path given as $1) with clang and lld (Debian
# packages clang, lld): plain wasm32, no libc, no WASI, against sdk/c/wasmkube.h. With
# -mbulk-memory the copies clang recognizes in loops become memory.copy instead of calls to
# a memcpy that a module without libc does not have.
set -euo pipefail
out="${1:-disallow-latest-tag.wasm}"
"${CLANG:-clang}" --target=wasm32 -nostdlib -O2 -mbulk-memory -Wall -Wextra -Werror -I ../../../sdk/c \
	-Wl,--no-entry -Wl,--strip-all -o "$out" disallow-latest-tag.c
