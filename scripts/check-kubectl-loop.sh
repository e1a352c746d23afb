#!/usr/bin/env bash
# The everyday kubectl loop of issue 13, checked with kubectl only against a running cluster
# (`wasmkube up`; KUBECONFIG pointing at its admin kubeconfig). It creates, in a namespace of
# its own (deleted at the end), a Deployment "web" of two busybox httpd pods behind a NodePort
# Service and a client pod, then checks: the Service by ClusterIP, by DNS name (short,
# namespace-relative, full) and by NodePort on the bridge's gateway from the client pod; a pod
# that turns unready leaves the rotation and comes back; exec -it under a pty; cp in and out;
# port-forward to a pod and to the Service, read with curl on loopback; run -i --rm prints its
# output; logs --since=5s --timestamps shows only the recent lines; kubectl debug (an
# ephemeral container with --target, --copy-to, node/NAME).
#
#   KUBECONFIG=_data/admin.kubeconfig scripts/check-kubectl-loop.sh [NODEPORT]
#   (GATEWAY=IP when the node's bridge is not the default 10.42.0.0/24: its gateway address)
#
# NODEPORT (default 30080) must be free in the cluster. Exits non-zero at the first failure.
# busybox's `wget -T` crashes (SIGSEGV, Debian's busybox 1.35): the checks use `wget` without it.
set -euo pipefail
NP=${1:-30080}
NS=kloop-$$
IMG=wasmkube.local/busybox:latest
K() { kubectl -n "$NS" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
tmp=$(mktemp -d)
cleanup() {
  [ -n "${pf:-}" ] && kill "$pf" 2>/dev/null || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

kubectl create namespace "$NS" >/dev/null
K apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: httpd
        image: $IMG
        imagePullPolicy: Never
        command: ["sh","-c","mkdir -p /www && hostname > /www/index.html && touch /www/ready && exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
          failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: $NP}]
EOF
K run client --image=$IMG --image-pull-policy=Never -- sleep 36000 >/dev/null
K rollout status deployment/web --timeout=120s >/dev/null
K wait --for=condition=Ready pod/client --timeout=120s >/dev/null
pods=($(K get pods -l app=web -o jsonpath='{.items[*].metadata.name}'))
[ ${#pods[@]} -eq 2 ] || fail "want 2 web pods, have ${pods[*]}"
cip=$(K get svc web -o jsonpath='{.spec.clusterIP}')
for i in $(seq 60); do
  [ "$(K get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}' | wc -w)" -eq 2 ] && break
  sleep 1
done

# Every target answers, and over a few requests both pods do.
for target in "$cip" web "web.$NS" "web.$NS.svc.cluster.local" "${GATEWAY:-10.42.0.1}:$NP"; do
  seen=$(for i in $(seq 12); do K exec client -- wget -qO- "http://$target/"; done | sort -u | tr '\n' ' ')
  [ "$(echo $seen | wc -w)" -eq 2 ] || fail "http://$target/ answered by [$seen], want both pods"
  ok "http://$target/ load-balanced over [$seen]"
done

# A pod that turns unready leaves the rotation, and comes back when ready again.
K exec "${pods[0]}" -- rm /www/ready
for i in $(seq 30); do
  [ "$(K get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}' | wc -w)" -eq 1 ] && break
  sleep 1
done
seen=$(for i in $(seq 10); do K exec client -- wget -qO- http://web/; done | sort -u | tr '\n' ' ')
[ "$seen" = "${pods[1]} " ] || fail "with ${pods[0]} unready, web answered by [$seen]"
ok "unready ${pods[0]} left the rotation"
K exec "${pods[0]}" -- touch /www/ready
for i in $(seq 30); do
  [ "$(K get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}' | wc -w)" -eq 2 ] && break
  sleep 1
done
ok "${pods[0]} back in the endpoints"

# exec -it under a pty: the shell sees a terminal of our size and its exit code comes back.
set +e
out=$( (sleep 2; printf 'tty; stty size\n'; sleep 1; printf 'exit 3\n') |
  script -qec "stty cols 123 rows 45; kubectl -n $NS exec -it client -- sh" /dev/null)
code=$?
set -e
[ $code -eq 3 ] || fail "exec -it exit code $code, want 3: $out"
echo "$out" | grep -q '/dev/pts/' || fail "exec -it: no pty: $out"
echo "$out" | grep -q '45 123' || fail "exec -it: terminal size not passed: $out"
ok "exec -it (pty, size 45x123, exit code 3)"

# cp both ways.
head -c 100000 /dev/urandom > "$tmp/in.bin"
K cp "$tmp/in.bin" client:/tmp/in.bin
K cp client:/tmp/in.bin "$tmp/out.bin" 2>/dev/null
cmp -s "$tmp/in.bin" "$tmp/out.bin" || fail "cp round trip differs"
ok "cp in and out (100000 bytes)"

# port-forward to a pod and to the Service.
for what in "pod/${pods[0]} 18089:8080" "svc/web 18090:80"; do
  set -- $what
  K port-forward "$1" "$2" >"$tmp/pf.log" 2>&1 & pf=$!
  lport=${2%%:*}
  got=""
  for i in $(seq 30); do got=$(curl -s "http://127.0.0.1:$lport/" || true); [ -n "$got" ] && break; sleep 0.5; done
  kill $pf; wait $pf 2>/dev/null || true; pf=""
  case " ${pods[*]} " in *" $got "*) ;; *) fail "port-forward $1: got [$got]";; esac
  ok "port-forward $1 answered by $got"
done

# run -i --rm prints its output and removes the pod.
out=$(K run once -i --rm --restart=Never --image=$IMG --image-pull-policy=Never -- sh -c 'echo line1; echo line2' 2>&1)
echo "$out" | grep -q line1 && echo "$out" | grep -q line2 || fail "run -i --rm printed: $out"
ok "run -i --rm printed its output"

# logs --since=5s --timestamps: only the recent lines, each with its time.
K run ticker --image=$IMG --image-pull-policy=Never -- sh -c 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done' >/dev/null
K wait --for=condition=Ready pod/ticker --timeout=120s >/dev/null
sleep 15
all=$(K logs ticker | wc -l)
recent=$(K logs ticker --since=5s --timestamps)
n=$(echo "$recent" | wc -l)
[ "$n" -ge 3 ] && [ "$n" -le 7 ] && [ "$n" -lt "$all" ] || fail "logs --since=5s: $n of $all lines: $recent"
echo "$recent" | grep -Eqv '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z tick [0-9]+$' && fail "logs --timestamps: $recent"
ok "logs --since=5s --timestamps: $n of $all lines, each timestamped"
# kubectl debug: an ephemeral container in a web pod's PID namespace (--target), attached
# under a pty; a copy of the client pod with a debug container; a pod on the node in the
# host's namespaces with its root at /host. The image is the node's imported busybox
# (--image=busybox would need a registry).
# tty_session CMD: runs kubectl CMD under script(1), typing the lines of stdin once the
# session has had time to attach.
tty_session() {
  local lines=$1; shift
  (sleep 6; printf '%s\n' "$lines"; sleep 2; printf 'exit\n') | script -qec "kubectl -n $NS $*" /dev/null
}
out=$(tty_session 'ps; echo "dbg-$((6*7))"' debug -it "${pods[1]}" --image=$IMG --image-pull-policy=Never --target=httpd -c dbg -- sh) ||
  fail "debug -it --target: $out"
echo "$out" | grep -q 'httpd -f -p 8080' && echo "$out" | grep -q 'dbg-42' || fail "debug -it --target=httpd: no httpd in ps: $out"
for i in $(seq 30); do
  st=$(K get pod "${pods[1]}" -o jsonpath='{.status.ephemeralContainerStatuses[0].state.terminated.exitCode}')
  [ -n "$st" ] && break
  sleep 1
done
[ "$st" = 0 ] || fail "ephemeral container dbg: exit code [$st] in status"
ok "debug -it --target=httpd: the target's processes seen, attached, exited 0 in ephemeralContainerStatuses"

out=$(tty_session 'echo "copy-$((6*7)) $(hostname)"' debug client -it --copy-to=client-debug --container=debugger --image=$IMG --image-pull-policy=Never -- sh) ||
  fail "debug --copy-to: $out"
echo "$out" | grep -q 'copy-42 client-debug' || fail "debug --copy-to=client-debug: $out"
[ "$(K get pod client-debug -o jsonpath='{.spec.containers[*].name}')" = "client debugger" ] || fail "client-debug containers: $(K get pod client-debug -o jsonpath='{.spec.containers[*].name}')"
K delete pod client-debug --wait=false >/dev/null
ok "debug --copy-to=client-debug --container=debugger"

node=$(K get pod client -o jsonpath='{.spec.nodeName}')
out=$(tty_session 'echo "pid1=$(cat /proc/1/comm) host=$(ls /host | tr "\n" " ")"' debug "node/$node" -it --image=$IMG --image-pull-policy=Never -- sh) ||
  fail "debug node/$node: $out"
echo "$out" | grep -q 'host=.*etc.*proc' || fail "debug node/$node: no host root at /host: $out"
echo "$out" | grep -q 'pid1=sh' && fail "debug node/$node: not in the host's PID namespace: $out"
K delete pod -l app.kubernetes.io/managed-by=kubectl-debug --wait=false >/dev/null
ok "debug node/$node: host PID namespace ($(echo "$out" | grep -o 'pid1=[a-z]*' | tail -1)), host root at /host"
echo "all checks passed"
