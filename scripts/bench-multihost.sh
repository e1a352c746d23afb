#!/usr/bin/env bash
# Issue 26's multi-host figures on one machine, with a `wasmkube up --nodes 3` of its own
# (test addresses only: host bridge wkb26, host network 172.30.65.0/24, cluster CIDR
# 10.65.0.0/16, API port 46490; nothing leaves the machine):
#   1. up --nodes 3 started -> all three nodes Ready (seconds);
#   2. a Node object created with a pod subnet -> its route on host 2 (ms), and deleted ->
#      route gone, five times;
#   3. TCP throughput pod to pod on the same host and between hosts, alternately (iperf3
#      from Debian inside the pods' network namespaces, as scripts/bench-clusterip.sh).
#
#   sudo scripts/bench-multihost.sh [BACKEND] [PAIRS] [SECONDS]     (BACKEND vxlan|host-gw)
set -euo pipefail
cd "$(dirname "$0")/.."
BACKEND=${1:-vxlan}
PAIRS=${2:-5}
SECS=${3:-5}
BIN=${BIN:-bin/wasmkube}
command -v iperf3 >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; }
command -v jq >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
DATA=$(mktemp -d /tmp/wkb26-XXXX)
export KUBECONFIG=$DATA/admin.kubeconfig
t0=$(date +%s%N)
$BIN up --nodes 3 --data-dir "$DATA" --listen 127.0.0.1:46490 --metrics-addr "" --node-name b26 \
  --host-bridge wkb26 --host-network 172.30.65.0/24 --bridge wkb26p0 --cluster-cidr 10.65.0.0/16 \
  --network-backend "$BACKEND" --warm-sandboxes 0 >"$DATA/up.log" 2>&1 &
UP=$!
cleanup() { kill -INT $UP 2>/dev/null || true; wait $UP 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT
until [ -f "$KUBECONFIG" ] && [ "$(kubectl get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" = 3 ]; do sleep 0.05; done
t1=$(date +%s%N)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); backend $BACKEND"
echo "up --nodes 3 -> 3 nodes Ready: $(( (t1-t0)/1000000 )) ms"

for n in 1 2 3 4 5; do
  kubectl create -f - >/dev/null <<J
{"apiVersion":"v1","kind":"Node","metadata":{"name":"fake-$n","annotations":{"wasmkube.io/vxlan-vtep-mac":"02:00:00:00:00:0$n","wasmkube.io/public-ip":"172.30.65.$((100+n))"}},
 "spec":{"podCIDR":"10.65.$((100+n)).0/24","podCIDRs":["10.65.$((100+n)).0/24"]},
 "status":{"addresses":[{"type":"InternalIP","address":"172.30.65.$((100+n))"}]}}
J
  a=$(date +%s%N)
  until ip -n wkb26-2 route | grep -q "10.65.$((100+n)).0/24"; do sleep 0.002; done
  b=$(date +%s%N)
  kubectl delete node "fake-$n" --wait=false >/dev/null
  c=$(date +%s%N)
  while ip -n wkb26-2 route | grep -q "10.65.$((100+n)).0/24"; do sleep 0.002; done
  d=$(date +%s%N)
  echo "new node's route on host 2: $(( (b-a)/1000000 )) ms after the create returned; gone $(( (d-c)/1000000 )) ms after the delete returned"
done

# sink on host 2, one client beside it, one on host 3.
for p in "sink b26-2 36101" "near b26-2 36102" "far b26-3 36103"; do
  set -- $p
  kubectl run "$1" --image=wasmkube.local/busybox --image-pull-policy=Never \
    --overrides="{\"spec\":{\"nodeName\":\"$2\",\"terminationGracePeriodSeconds\":0}}" -- sleep "$3" >/dev/null
done
kubectl wait --for=condition=Ready pod/sink pod/near pod/far --timeout=180s >/dev/null
SINK_IP=$(kubectl get pod sink -o jsonpath='{.status.podIP}')
pid() { pgrep -f -x "sleep $1" | head -1; }
nsenter -t "$(pid 36101)" -n iperf3 -s -p 5201 -D --pidfile "$DATA/iperf3.pid"
trap 'kill "$(cat $DATA/iperf3.pid)" 2>/dev/null || true; cleanup' EXIT
sleep 1
rate() { nsenter -t "$(pid "$1")" -n iperf3 -c "$SINK_IP" -p 5201 -t "$SECS" -J | jq '.end.sum_received.bits_per_second / 1e6 | floor'; }
near=(); far=()
for i in $(seq "$PAIRS"); do
  n=$(rate 36102); f=$(rate 36103)
  near+=("$n"); far+=("$f")
  echo "pair $i: same host $n Mbit/s, between hosts $f Mbit/s"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mn=$(med "${near[@]}"); mf=$(med "${far[@]}")
echo "median: same host $mn Mbit/s, between hosts $mf Mbit/s, ratio $(awk "BEGIN {printf \"%.2f\", $mf/$mn}")"
# Round trips, 100 each, alternating far and near in blocks of 20; p50 from the replies' own
# times (ping's summary gives only min/avg/max).
rtts() { kubectl exec "$1" -- ping -c 20 -i 0.2 "$SINK_IP" | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p'; }
farr=(); nearr=()
for _ in 1 2 3 4 5; do farr+=($(rtts far)); nearr+=($(rtts near)); done
pf=$(med "${farr[@]}"); pn=$(med "${nearr[@]}")
echo "ping p50 ($(echo ${#farr[@]}) round trips each): between hosts $pf ms, same host $pn ms, added $(awk "BEGIN {printf \"%.3f\", $pf-$pn}") ms"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
