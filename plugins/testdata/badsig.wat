;; A module whose wasmkube_score takes no batch count.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_score") (result i32) i32.const 0))
