;; {{.Name}}: a wasmkube scheduler Score plugin in WebAssembly text (docs/abi.md). A node
;; scores the share of its allocatable cpu left free after placing the pod, 0 to 100 (the
;; non-zero requests, as upstream's LeastAllocated counts them).
(module
  ;; pod_requests(out) writes 5 x i64: cpu, memory, ephemeral, non-zero cpu, non-zero memory
  (import "wasmkube" "pod_requests" (func $pod_requests (param i32) (result i32)))
  ;; node_resources(i, out) writes 10 x i64: [0..3] allocatable, [4..7] requested, [8..9] non-zero requested cpu, memory
  (import "wasmkube" "node_resources" (func $node_resources (param i32 i32) (result i32)))
  (import "wasmkube" "node_score" (func $node_score (param i32 i64)))
  (import "wasmkube" "status_reason" (func $status_reason (param i32 i32)))

  (memory (export "memory") 1)
  ;; 0: the pod record (40 bytes); 64: a node record (80 bytes); 256: a message
  (data (i32.const 256) "pod_requests: unavailable") ;; 25 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_score(count): a score for each node 0..count-1 of the batch, from that node
  ;; alone (never rescaled within the batch: that is NormalizeScore's job).
  (func (export "wasmkube_score") (param $count i32) (result i32)
    (local $i i32) (local $pod i64) (local $alloc i64) (local $used i64) (local $score i64)
    (if (i32.ne (call $pod_requests (i32.const 0)) (i32.const 40))
      (then
        (call $status_reason (i32.const 256) (i32.const 25))
        (return (i32.const 1))))                                  ;; Error
    (local.set $pod (i64.load offset=24 (i32.const 0)))           ;; [3] non-zero cpu (milli)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $score (i64.const 0))
        (if (i32.eq (call $node_resources (local.get $i) (i32.const 64)) (i32.const 80))
          (then
            (local.set $alloc (i64.load offset=64 (i32.const 0)))  ;; [0] allocatable cpu
            (local.set $used (i64.add (i64.load offset=128 (i32.const 0)) (local.get $pod))) ;; [8] + pod
            (if (i32.and (i64.gt_s (local.get $alloc) (i64.const 0)) (i64.lt_s (local.get $used) (local.get $alloc)))
              (then (local.set $score
                (i64.div_s (i64.mul (i64.sub (local.get $alloc) (local.get $used)) (i64.const 100)) (local.get $alloc)))))))
        (call $node_score (local.get $i) (local.get $score))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))  ;; Success
