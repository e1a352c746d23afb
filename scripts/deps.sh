#!/usr/bin/env bash
# Installs what wasmkube's build and tests need, idempotently: Debian packages and Go modules.
# Used by `make run` and `make test`; safe to run many times. Needs root (or sudo) for apt-get.
set -euo pipefail

PKGS=(containerd runc containernetworking-plugins busybox-static iproute2 iptables
      clang lld wasi-libc libclang-rt-14-dev-wasm32 wabt etcd-server
      rustc libstd-rust-dev-wasm32)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "deps: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root or sudo to apt-get install ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
go mod download
