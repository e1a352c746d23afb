;; The Filter+Score of BenchmarkFilterScore (node-resources-fit's cpu, memory and pod
;; count check; pack-score's MostAllocated) written by hand in WAT, reading each node's
;; record with node_resources and setting each score with node_score: what the per-node
;; host functions cost with no language runtime in the guest (docs/benchmarks.md, "Where
;; a wasm Filter+Score's time goes"). fitpack-range.wat is the same with the run forms.
(module
  (import "wasmkube" "pod_requests" (func $pod_requests (param i32) (result i32)))
  (import "wasmkube" "node_resources" (func $node_resources (param i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (import "wasmkube" "node_score" (func $node_score (param i32 i64)))
  (memory (export "memory") 1)
  ;; 0: the pod_requests record (40 bytes); 64: one node_resources record (80 bytes);
  ;; 256: the reason.
  (data (i32.const 256) "Insufficient resources")
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  ;; $fits: the node record at $r can hold the pod (requests at 0).
  (func $fits (param $r i32) (result i32)
    (i32.eqz (i32.or (i32.or
      ;; requested pods + 1 > allocatable pods
      (i64.gt_s (i64.add (i64.load offset=56 (local.get $r)) (i64.const 1)) (i64.load offset=24 (local.get $r)))
      ;; cpu > allocatable - requested
      (i64.gt_s (i64.load (i32.const 0)) (i64.sub (i64.load (local.get $r)) (i64.load offset=32 (local.get $r)))))
      ;; memory > allocatable - requested
      (i64.gt_s (i64.load offset=8 (i32.const 0)) (i64.sub (i64.load offset=8 (local.get $r)) (i64.load offset=40 (local.get $r)))))))

  ;; $most: min(requested, capacity) * 100 / capacity, 0 when capacity <= 0.
  (func $most (param $req i64) (param $cap i64) (result i64)
    (if (result i64) (i64.le_s (local.get $cap) (i64.const 0))
      (then (i64.const 0))
      (else (i64.div_s
        (i64.mul (select (local.get $req) (local.get $cap) (i64.lt_s (local.get $req) (local.get $cap))) (i64.const 100))
        (local.get $cap)))))

  ;; $packing: the score of the node record at $r (non-zero requests at 24 and 32).
  (func $packing (param $r i32) (result i64)
    (i64.div_s (i64.add
      (call $most (i64.add (i64.load offset=64 (local.get $r)) (i64.load offset=24 (i32.const 0))) (i64.load (local.get $r)))
      (call $most (i64.add (i64.load offset=72 (local.get $r)) (i64.load offset=32 (i32.const 0))) (i64.load offset=8 (local.get $r))))
      (i64.const 2)))

  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $i i32)
    (drop (call $pod_requests (i32.const 0)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $i) (local.get $count)))
        (drop (call $node_resources (local.get $i) (i32.const 64)))
        (if (i32.eqz (call $fits (i32.const 64)))
          (then (call $node_status (local.get $i) (i32.const 2) (i32.const 256) (i32.const 22))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0))

  (func (export "wasmkube_score") (param $count i32) (result i32)
    (local $i i32)
    (drop (call $pod_requests (i32.const 0)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_s (local.get $i) (local.get $count)))
        (drop (call $node_resources (local.get $i) (i32.const 64)))
        (call $node_score (local.get $i) (call $packing (i32.const 64)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
