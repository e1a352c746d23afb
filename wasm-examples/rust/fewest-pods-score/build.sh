#!/usr/bin/env bash
# Builds fewest-pods-score.wasm (or the path given as $1) with Debian's cargo and rustc, offline.
exec bash ../cargo-build.sh fewest-pods-score "$@"
