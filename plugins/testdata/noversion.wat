;; A module without the version marker.
(module
  (memory (export "memory") 1)
  (func (export "wasmkube_filter") (param i32) (result i32) i32.const 0))
