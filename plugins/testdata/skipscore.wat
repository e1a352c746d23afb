;; A PreScore that always returns Skip in front of a Score that would trap: no cycle ever
;; calls the Score, so the loader and `wasmkube plugin check` must accept the module.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_prescore") (param i32) (result i32) i32.const 5)
  (func (export "wasmkube_score") (param i32) (result i32) unreachable))
