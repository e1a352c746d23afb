#!/usr/bin/env bash
# Throughput through a ClusterIP against pod IP to pod IP (issue 13's target: within 10%),
# on a running `wasmkube up` with its real node (KUBECONFIG pointing at it). Two busybox
# pods on the node; iperf3 (Debian's) runs on the host inside each pod's network namespace
# (nsenter -n), so the packets take the pods' veths, the bridge and the node's Service rules
# exactly as the pods' own would; nothing leaves the machine.
#
#   KUBECONFIG=_data/admin.kubeconfig scripts/bench-clusterip.sh [PAIRS] [SECONDS]
#
# Prints one line per pair (pod IP, then cluster IP, alternately) and the medians.
set -euo pipefail
PAIRS=${1:-5}
SECS=${2:-5}
NS=bench-clusterip
command -v iperf3 >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; }
command -v jq >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
IMAGE=${IMAGE:-wasmkube.local/busybox:latest}

kubectl create namespace $NS >/dev/null 2>&1 || true
cleanup() { kubectl delete namespace $NS --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT
# Distinct sleep arguments find each pod's process on the host.
kubectl -n $NS apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: sink, labels: {app: sink, team: bench}}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: $IMAGE, command: [sleep, "36001"], resources: {requests: {cpu: 10m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {team: bench}}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: $IMAGE, command: [sleep, "36002"], resources: {requests: {cpu: 10m}}}]
---
apiVersion: v1
kind: Service
metadata: {name: sink}
spec:
  selector: {app: sink}
  ports: [{port: 5201, targetPort: 5201}]
EOF
kubectl -n $NS wait --for=condition=Ready pod/sink pod/client --timeout=180s >/dev/null
POD_IP=$(kubectl -n $NS get pod sink -o jsonpath='{.status.podIP}')
CLUSTER_IP=$(kubectl -n $NS get svc sink -o jsonpath='{.spec.clusterIP}')
SINK=$(pgrep -f -x 'sleep 36001' | head -1)
CLIENT=$(pgrep -f -x 'sleep 36002' | head -1)
[ -n "$SINK" ] && [ -n "$CLIENT" ] || { echo "bench-clusterip: cannot find the pods' processes" >&2; exit 1; }

nsenter -t "$SINK" -n iperf3 -s -p 5201 -D --pidfile /tmp/bench-clusterip-iperf3.pid
trap 'kill "$(cat /tmp/bench-clusterip-iperf3.pid)" 2>/dev/null || true; cleanup' EXIT
sleep 1
# The Service's rules are in force once a connection through the cluster IP opens.
for _ in $(seq 50); do nsenter -t "$CLIENT" -n iperf3 -c "$CLUSTER_IP" -p 5201 -t 1 >/dev/null 2>&1 && break; sleep 0.2; done

rate() { nsenter -t "$CLIENT" -n iperf3 -c "$1" -p 5201 -t "$SECS" -J | jq '.end.sum_received.bits_per_second / 1e6 | floor'; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); pod IP $POD_IP, cluster IP $CLUSTER_IP, ${SECS}s per run"
pods=() ; cips=()
for i in $(seq "$PAIRS"); do
  p=$(rate "$POD_IP"); c=$(rate "$CLUSTER_IP")
  pods+=("$p"); cips+=("$c")
  echo "pair $i: pod IP $p Mbit/s, cluster IP $c Mbit/s, ratio $(awk -v a="$c" -v b="$p" 'BEGIN{printf "%.2f", a/b}')"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
mp=$(median "${pods[@]}"); mc=$(median "${cips[@]}")
echo "median: pod IP $mp Mbit/s, cluster IP $mc Mbit/s, ratio $(awk -v a="$mc" -v b="$mp" 'BEGIN{printf "%.2f", a/b}')"
