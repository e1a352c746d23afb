;; A module of a future ABI version.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 2)
  (func (export "wasmkube_filter") (param i32) (result i32) i32.const 0))
