;; Filter that rejects node 0 of every batch (Unschedulable) without giving a reason.
(module
  (import "wasmkube" "node_status" (func $node_status (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (call $node_status (i32.const 0) (i32.const 2) (i32.const 0) (i32.const 0))
    (i32.const 0)))
