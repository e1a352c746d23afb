;; fitpack-node.wat with the run forms of the host functions: node records read 256 at a
;; time with node_resources_range, scores handed over 256 at a time with node_scores.
(module
  (import "wasmkube" "pod_requests" (func $pod_requests (param i32) (result i32)))
  (import "wasmkube" "node_resources_range" (func $node_resources_range (param i32 i32 i32) (result i32)))
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (import "wasmkube" "node_scores" (func $node_scores (param i32 i32 i32)))
  (memory (export "memory") 1)
  ;; 0: the pod_requests record (40 bytes); 256: the reason; 1024: 256 node records
  ;; (20480 bytes); 32768: 256 scores (2048 bytes).
  (data (i32.const 256) "Insufficient resources")
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))

  (func $fits (param $r i32) (result i32)
    (i32.eqz (i32.or (i32.or
      (i64.gt_s (i64.add (i64.load offset=56 (local.get $r)) (i64.const 1)) (i64.load offset=24 (local.get $r)))
      (i64.gt_s (i64.load (i32.const 0)) (i64.sub (i64.load (local.get $r)) (i64.load offset=32 (local.get $r)))))
      (i64.gt_s (i64.load offset=8 (i32.const 0)) (i64.sub (i64.load offset=8 (local.get $r)) (i64.load offset=40 (local.get $r)))))))

  (func $most (param $req i64) (param $cap i64) (result i64)
    (if (result i64) (i64.le_s (local.get $cap) (i64.const 0))
      (then (i64.const 0))
      (else (i64.div_s
        (i64.mul (select (local.get $req) (local.get $cap) (i64.lt_s (local.get $req) (local.get $cap))) (i64.const 100))
        (local.get $cap)))))

  (func $packing (param $r i32) (result i64)
    (i64.div_s (i64.add
      (call $most (i64.add (i64.load offset=64 (local.get $r)) (i64.load offset=24 (i32.const 0))) (i64.load (local.get $r)))
      (call $most (i64.add (i64.load offset=72 (local.get $r)) (i64.load offset=32 (i32.const 0))) (i64.load offset=8 (local.get $r))))
      (i64.const 2)))

  ;; $window reads the records of nodes $first .. into 1024 and returns how many.
  (func $window (param $first i32) (result i32)
    (call $node_resources_range (local.get $first) (i32.const 256) (i32.const 1024)))

  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (local $lo i32) (local $n i32) (local $j i32)
    (drop (call $pod_requests (i32.const 0)))
    (block $done
      (loop $windows
        (br_if $done (i32.ge_s (local.get $lo) (local.get $count)))
        (local.set $n (call $window (local.get $lo)))
        (br_if $done (i32.le_s (local.get $n) (i32.const 0)))
        (local.set $j (i32.const 0))
        (block $end
          (loop $next
            (br_if $end (i32.ge_s (local.get $j) (local.get $n)))
            (if (i32.eqz (call $fits (i32.add (i32.const 1024) (i32.mul (local.get $j) (i32.const 80)))))
              (then (call $node_status (i32.add (local.get $lo) (local.get $j)) (i32.const 2) (i32.const 256) (i32.const 22))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (local.set $lo (i32.add (local.get $lo) (local.get $n)))
        (br $windows)))
    (i32.const 0))

  (func (export "wasmkube_score") (param $count i32) (result i32)
    (local $lo i32) (local $n i32) (local $j i32)
    (drop (call $pod_requests (i32.const 0)))
    (block $done
      (loop $windows
        (br_if $done (i32.ge_s (local.get $lo) (local.get $count)))
        (local.set $n (call $window (local.get $lo)))
        (br_if $done (i32.le_s (local.get $n) (i32.const 0)))
        (local.set $j (i32.const 0))
        (block $end
          (loop $next
            (br_if $end (i32.ge_s (local.get $j) (local.get $n)))
            (i64.store (i32.add (i32.const 32768) (i32.mul (local.get $j) (i32.const 8)))
              (call $packing (i32.add (i32.const 1024) (i32.mul (local.get $j) (i32.const 80)))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $next)))
        (call $node_scores (local.get $lo) (local.get $n) (i32.const 32768))
        (local.set $lo (i32.add (local.get $lo) (local.get $n)))
        (br $windows)))
    (i32.const 0)))
