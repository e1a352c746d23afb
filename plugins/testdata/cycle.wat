;; A plugin that relies on the cycle: Filter traps unless its PreFilter stored "k" in the
;; cycle state, and Score traps if it is ever called, because its PreScore always returns
;; Skip. Loading it proves that the smoke call runs the entry points as one cycle does.
(module
  (import "wasmkube" "state_get" (func $state_get (param i32 i32 i32 i32) (result i32)))
  (import "wasmkube" "state_set" (func $state_set (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "k")
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_prefilter") (result i32)
    (drop (call $state_set (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1)))
    (i32.const 0))
  (func (export "wasmkube_filter") (param $n i32) (result i32)
    (if (i32.ne (call $state_get (i32.const 0) (i32.const 1) (i32.const 16) (i32.const 16)) (i32.const 1))
      (then unreachable))
    (i32.const 0))
  (func (export "wasmkube_prescore") (param $n i32) (result i32) (i32.const 5))
  (func (export "wasmkube_score") (param $n i32) (result i32) unreachable))
