#!/usr/bin/env bash
# Builds {{.Module}} (or the path given as $1) with clang and lld (Debian packages clang,
# lld): plain wasm32, no libc, no WASI. -nostdlib and -Wl,--no-entry: no C runtime, no
# _start; -mbulk-memory: the compiler's memset/memcpy become memory.fill/memory.copy
# instead of calls to a libc that is not there (with --allow-undefined they would be
# env.memset imports, which the host refuses).
set -euo pipefail
out="${1:-{{.Module}}}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")"
"${CLANG:-clang}" --target=wasm32 -nostdlib -mbulk-memory -O2 -Wall -Wextra -Werror \
	-Wl,--no-entry -Wl,--strip-all -o "$out" {{.Name}}.c
