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
  ;; sign_fragment(key_ptr, key_len, value_ptr, value_len)
  (import "wasmkube" "sign_fragment" (func $sign_fragment (param i32 i32 i32 i32)))

  (memory (export "memory") 1)
  ;; 0: the pod record (40 bytes); 64: a node record (80 bytes); 256: a message;
  ;; 288: a fragment's key; 320..344: its value's digits, written from the end
  (data (i32.const 256) "pod_requests: unavailable") ;; 25 bytes
  (data (i32.const 288) "nonzero-cpu")               ;; 11 bytes

  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; wasmkube_sign: the signature (docs/abi.md section 1.5). The score reads the pod's
  ;; non-zero cpu request and nothing else of it, so pods that ask for the same cpu may be
  ;; placed from one pass (batching): one fragment, nonzero-cpu = that request in decimal.
  ;; Sign everything the score reads when you change it; `wasmkube plugin conformance`
  ;; fails a plugin that signs too little.
  (func (export "wasmkube_sign") (result i32)
    (local $v i64) (local $at i32)
    (if (i32.ne (call $pod_requests (i32.const 0)) (i32.const 40))
      (then (return (i32.const 2))))                              ;; Unsignable
    (local.set $v (i64.load offset=24 (i32.const 0)))             ;; [3] non-zero cpu (milli)
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then (return (i32.const 2))))
    (local.set $at (i32.const 344))
    (loop $digit
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i32.store8 (local.get $at) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digit (i64.gt_u (local.get $v) (i64.const 0))))
    (call $sign_fragment (i32.const 288) (i32.const 11) (local.get $at) (i32.sub (i32.const 344) (local.get $at)))
    (i32.const 0))

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
