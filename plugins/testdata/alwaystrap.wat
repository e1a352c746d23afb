;; A Score plugin that traps on every call: the loader's smoke call must reject it.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_score") (param i32) (result i32) unreachable))
