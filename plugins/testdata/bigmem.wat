;; A module that declares 2048 pages (128Mi) of initial memory.
(module
  (memory (export "memory") 2048)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_filter") (param i32) (result i32) i32.const 0))
