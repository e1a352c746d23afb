#!/usr/bin/env bash
# Runs the benchmarks recorded in docs/benchmarks.md, each with the exact command shown there.
# Output goes to the terminal and to bench-results/<time>.txt. Heavy: about 10-15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
mkdir -p bench-results
out=bench-results/$(date -u +%Y%m%dT%H%M%SZ).txt
run() { echo "== $*" | tee -a "$out"; "$@" 2>&1 | tee -a "$out"; }

# API server and storage
run go test ./core/apiserver -run '^$' -bench PodCreate -benchtime 5000x
run go test ./core/storage -run '^$' -bench 'BenchmarkCreate|BenchmarkWatchFanout' -benchtime 5000x
# etcd leader changes under 8 writers: client-visible errors (issue 16: 0) and write latency
run go test ./core/apiserver -run '^$' -bench EtcdLeaderChange -benchtime 10x
# Scheduler: the algorithm alone, then end to end through the API server, native and wasm
run go test ./core/scheduler/runtime -run '^$' -bench SchedulePod -benchtime 3000x
run bin/wasmkube bench scheduler --nodes 5000 --pods 10000 --output json
# The same policy native and as wasm modules, one after the other in this run (issue 4: wasm >= 80% of native)
run bin/wasmkube bench scheduler --nodes 5000 --pods 10000 --output json --config wasm-examples/go/bench-native.yaml
run bin/wasmkube bench scheduler --nodes 5000 --pods 10000 --output json --config wasm-examples/go/bench-wasm.yaml
# Wasm plugins: cost per (pod, node), wasm against native
run go test ./plugins/... -run '^$' -bench . -benchtime 2s
# Admission: pod creates with the four example admission policies against none (issue 10: >= 0.85x, p99 <= 1 ms per policy)
run go test ./plugins/admitwasm -run '^$' -bench 'PodCreatePolicies|Admission|PolicyCall' -benchtime 5000x
# Kubelet pod startup (real containerd and CNI; needs root), in a cpuacct cgroup of its own
# when cgroup v1 has one, so it also reports the node's CPU per pod
if [ -d /sys/fs/cgroup/cpuacct ] && mkdir -p /sys/fs/cgroup/cpuacct/wasmkube-bench 2>/dev/null; then
	cg=/sys/fs/cgroup/cpuacct/wasmkube-bench/cgroup.procs
else
	cg=/dev/null
fi
runcg() { echo "== $*" | tee -a "$out"; (echo $BASHPID > "$cg" 2>/dev/null || true; exec "$@") 2>&1 | tee -a "$out"; }
runcg go test ./kubelet -run '^$' -bench PodStartup -benchtime 10x
WASMKUBE_BENCH_PODS=1 runcg go test ./kubelet -run '^$' -bench PodStartup -benchtime 10x
WASMKUBE_BENCH_WARM=0 runcg go test ./kubelet -run '^$' -bench PodStartup -benchtime 5x
# Controllers: a 1,000-replica Deployment on 100 hollow nodes
run bin/wasmkube bench deployment --nodes 100 --replicas 1000 --output json --log-level error
echo "results in $out"
