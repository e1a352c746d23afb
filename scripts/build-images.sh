#!/usr/bin/env bash
# Builds the OCI archives the kubelet imports at start, offline:
#   bin/images/busybox.tar  wasmkube.local/busybox:latest  (Debian's busybox-static)
#   bin/images/pause.tar    wasmkube.local/pause:latest    (kubelet/images/pause, static Go)
#   bin/images/webhook-server.tar  wasmkube.local/webhook-server:latest  (examples/webhook-server, static Go)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
mkdir -p bin/images
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || { echo "build-images: $BUSYBOX missing: apt-get install busybox-static" >&2; exit 1; }
file -L "$BUSYBOX" 2>/dev/null | grep -q "dynamically" && { echo "build-images: $BUSYBOX is not static: apt-get install busybox-static" >&2; exit 1; }
CGO_ENABLED=0 go build -trimpath -ldflags=-s -o bin/images/pause.bin ./kubelet/images/pause
CGO_ENABLED=0 go build -trimpath -ldflags=-s -o bin/images/webhook-server.bin ./examples/webhook-server
[ -x bin/wasmkube ] || go build -o bin/wasmkube ./cmd/wasmkube
bin/wasmkube image build-builtin --busybox "$BUSYBOX" --pause bin/images/pause.bin \
  --webhook-server bin/images/webhook-server.bin --out bin/images
rm -f bin/images/pause.bin bin/images/webhook-server.bin
