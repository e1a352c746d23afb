#!/usr/bin/env bash
# Builds disallow-latest-tag.wasm (or the path given as $1) with asc and the SDK's build settings.
exec bash ../asc-build.sh disallow-latest-tag "$@"
