#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
echo "build-examples: nothing to do yet"
