;; node_scores misused in batches of 2 nodes (the load's smoke calls have 1, and pass):
;; Score hands over two scores starting at node 1, Filter calls it at all. Both are
;; garbage results (ranges_test.go).
(module
  (import "wasmkube" "node_scores" (func $node_scores (param i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) (i32.const 1))
  (func (export "wasmkube_filter") (param $count i32) (result i32)
    (if (i32.eq (local.get $count) (i32.const 2))
      (then (call $node_scores (i32.const 0) (i32.const 0) (i32.const 0))))
    (i32.const 0))
  (func (export "wasmkube_score") (param $count i32) (result i32)
    (if (i32.eq (local.get $count) (i32.const 2))
      (then (call $node_scores (i32.const 1) (i32.const 2) (i32.const 0))))
    (i32.const 0)))
