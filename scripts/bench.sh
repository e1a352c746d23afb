#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
echo "bench: nothing to do yet"
