#!/usr/bin/env bash
# Builds default-labels.wasm (or the path given as $1) with Debian's cargo and rustc, offline.
exec bash ../cargo-build.sh default-labels "$@"
