#!/usr/bin/env bash
# Builds zone-filter.wasm (or the path given as $1) with asc and the SDK's build settings.
exec bash ../asc-build.sh zone-filter "$@"
