#!/usr/bin/env bash
# Installs what wasmkube's build and tests need, idempotently: Debian packages, Go modules
# and the AssemblyScript compiler (npm).
# Used by `make run` and `make test`; safe to run many times. Needs root (or sudo) for apt-get.
set -euo pipefail

PKGS=(containerd runc crun containernetworking-plugins busybox-static iproute2 iptables
      clang lld wasi-libc libclang-rt-14-dev-wasm32 wabt etcd-server
      rustc libstd-rust-dev-wasm32 cargo curl iperf3 jq
      chromium)
# chromium: the decision explorer's browser tests drive Debian's /usr/bin/chromium headless
# (github.com/chromedp/chromedp); no browser is downloaded at test time.

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm for AssemblyScript: any node with npm will do (a nodesource nodejs bundles
# npm, and Debian's npm package conflicts with it), so install Debian's only when missing.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)

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

# The AssemblyScript SDK and examples, from their lockfiles (assemblyscript is pinned in
# package.json). npm ci only when node_modules is missing or older than the lockfile.
for d in sdk/assemblyscript wasm-examples/assemblyscript; do
  if [ ! -f "$d/node_modules/.package-lock.json" ] || [ "$d/package-lock.json" -nt "$d/node_modules/.package-lock.json" ]; then
    echo "deps: npm ci in $d"
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# helm, for the tests that install a chart (issue 14: helm keeps releases in Secrets and
# `helm create`'s chart has a ServiceAccount). Built from its Go module, pinned, into bin/.
# A go-installed helm reports only major.minor (v3.21), hence the match on that.
HELM_VERSION=v3.21.4
if [ ! -x bin/helm ] || ! bin/helm version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
  echo "deps: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mkdir -p bin
  GOBIN="$PWD/bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

# Helm 4, for the test that installs and upgrades a chart with its default server-side apply
# (issue 28). Its program is also named helm: it is installed into a scratch GOBIN and moved
# to bin/helm4 beside helm v3.
HELM4_VERSION=v4.3.2
if [ ! -x bin/helm4 ] || ! bin/helm4 version --short 2>/dev/null | grep -q "^${HELM4_VERSION%.*}"; then
  echo "deps: go install helm.sh/helm/v4/cmd/helm@$HELM4_VERSION (as bin/helm4)"
  mkdir -p bin
  helm4_gobin=$(mktemp -d)
  GOBIN="$helm4_gobin" GOFLAGS=-mod=mod go install "helm.sh/helm/v4/cmd/helm@$HELM4_VERSION"
  mv "$helm4_gobin/helm" bin/helm4
  rmdir "$helm4_gobin"
fi
