;; Validate that always traps: it fails its smoke call, so a config naming it is refused.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_abi_version") (result i32) i32.const 1)
  (func (export "wasmkube_validate") (result i32) unreachable))
