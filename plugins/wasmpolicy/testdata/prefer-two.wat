;; prefer-two: a Score for the API tier's tests: a node whose name ends in 2 scores 100,
;; every other node 0.
(module
  (import "wasmkube" "node_name" (func $node_name (param i32 i32 i32) (result i32)))
  (import "wasmkube" "node_score" (func $node_score (param i32 i64)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  (func (export "wasmkube_score") (param $count i32) (result i32)
    (local $i i32)
    (local $n i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
      (local.set $n (call $node_name (local.get $i) (i32.const 0) (i32.const 128)))
      (if (i32.eq (i32.load8_u (i32.sub (local.get $n) (i32.const 1))) (i32.const 50))
        (then (call $node_score (local.get $i) (i64.const 100)))
        (else (call $node_score (local.get $i) (i64.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (i32.const 0)))
