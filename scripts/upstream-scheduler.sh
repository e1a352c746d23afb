#!/usr/bin/env bash
# Builds upstream kube-scheduler, unchanged, into bin/kube-scheduler: the compatibility check
# of issue 28 runs it against `wasmkube server --apiserver-only` (docs/apiserver.md,
# "Upstream components"). The build lives in its own module (bench/upstream/go.mod) that
# requires k8s.io/kubernetes and replaces its staging modules (k8s.io/api, client-go, ...)
# with their published releases, so the main go.mod's k8s.io versions are never touched.
# Idempotent: does nothing when bin/kube-scheduler already reports $KUBE_VERSION.
# The build is heavy (about 1,500 packages): it runs under nice, and without -trimpath so
# that the packages it shares with wasmkube's own build (k8s.io/api, apimachinery, client-go
# at the same versions) come from the build cache.
set -euo pipefail

KUBE_VERSION=v1.37.2
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
out="$PWD/bin/kube-scheduler"

if [ -x "$out" ] && "$out" --version 2>/dev/null | grep -q "Kubernetes $KUBE_VERSION\$"; then
  exit 0
fi

mkdir -p bin
echo "upstream-scheduler: building k8s.io/kubernetes/cmd/kube-scheduler@$KUBE_VERSION into bin/"
pkg=k8s.io/component-base/version
# The version variables upstream's own build sets (hack/lib/version.sh), so --version and
# the User-Agent name the release instead of v0.0.0-master.
minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
cd bench/upstream
nice -n 10 go build -ldflags "$ldflags" -o "$out" k8s.io/kubernetes/cmd/kube-scheduler
"$out" --version
