;; A module that imports from a module the host does not provide.
(module
  (import "env" "open_socket" (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_filter") (param i32) (result i32) i32.const 0))
