#!/usr/bin/env bash
# Builds http-probe.wasm (or the path given as $1) with asc and the SDK's build settings.
exec bash ../asc-build.sh http-probe "$@"
