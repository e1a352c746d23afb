#!/usr/bin/env bash
# Builds tcp-probe.wasm (or the path given as $1) with Debian's cargo and rustc, offline.
exec bash ../cargo-build.sh tcp-probe "$@"
