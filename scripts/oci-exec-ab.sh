#!/usr/bin/env bash
# The OCI runtime's `exec` on its own, without containerd: one busybox container under runc
# and one under crun from the same bundle, then `runc exec` and `crun exec` of `true`
# alternated N times (A B A B), and crun behind `sh -c 'exec crun ...'` as the kubelet's
# wrapper runs it on a hybrid cgroup host (docs/kubelet.md, "The OCI runtime"). Prints the
# p50, min and max of each and the load average. Needs root, runc, crun and busybox-static.
#
#   sudo scripts/oci-exec-ab.sh [N]        # docs/benchmarks.md, "kubectl exec round trip"
set -euo pipefail
N=${1:-30}
for b in runc crun busybox unshare; do command -v "$b" >/dev/null || { echo "oci-exec-ab: $b is not installed" >&2; exit 1; }; done
dir=$(mktemp -d /tmp/oci-exec-ab.XXXXXX)
id=$(basename "$dir" | tr -dc 'a-zA-Z0-9')
cleanup() {
  runc delete -f "r$id" >/dev/null 2>&1 || true
  crun delete -f "c$id" >/dev/null 2>&1 || true
  for h in /sys/fs/cgroup/*/oci-exec-ab; do rmdir "$h" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/rootfs/bin"
cp "$(command -v busybox)" "$dir/rootfs/bin/busybox"
for a in sh true sleep; do ln -s busybox "$dir/rootfs/bin/$a"; done
cd "$dir"
runc spec
# A detached container without a terminal, sleeping; crun 1.8 accepts spec versions up to 1.1.
sed -i 's/"terminal": true/"terminal": false/; s/"sh"$/"sleep", "3600"/; s/"ociVersion": "[^"]*"/"ociVersion": "1.0.2"/' config.json
grep -q '"sleep", "3600"' config.json || { echo "oci-exec-ab: unexpected runc spec layout" >&2; exit 1; }
with_cgroup() { sed "s#\"linux\": {#\"linux\": {\n\t\t\"cgroupsPath\": \"/oci-exec-ab/$1\",#" config.json > "config.$1.json"; }
with_cgroup "r$id"; with_cgroup "c$id"
cp "config.r$id.json" config.json
runc run -d "r$id" </dev/null >/dev/null
cp "config.c$id.json" config.json
create_crun="crun run -d c$id"
if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
  # A hybrid host whose unified hierarchy holds a controller: crun must not see it to create.
  unshare --mount --propagation private /bin/sh -c "umount -l /sys/fs/cgroup/unified && exec $create_crun" </dev/null >/dev/null
else
  $create_crun </dev/null >/dev/null
fi
t() { local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( ($(date +%s%N) - s) / 1000 )); }
: > runc.us; : > crun.us; : > crun-sh.us
uptime
for _ in $(seq "$N"); do
  t runc exec "r$id" true >> runc.us
  t crun exec "c$id" true >> crun.us
  t /bin/sh -c "exec crun exec c$id true" >> crun-sh.us
done
uptime
for f in runc crun crun-sh; do
  sort -n "$f.us" | awk -v n="$f" '{a[NR]=$1} END {printf "%-8s n=%d p50=%.1f ms min=%.1f max=%.1f\n", n, NR, a[int((NR+1)/2)]/1000, a[1]/1000, a[NR]/1000}'
done
